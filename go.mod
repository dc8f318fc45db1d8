module github.com/wraptool/wraptool

go 1.26.0

require (
	github.com/peterbourgon/ff/v4 v4.0.0-alpha.4
	go.yaml.in/yaml/v3 v3.0.6
)
