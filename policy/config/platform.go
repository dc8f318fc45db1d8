package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Options adjusts where Load and the path helpers look. A nil *Options, and
// each zero field, means the real process environment; tests set them so they
// need not change the process's own environment.
type Options struct {
	// Home is the home directory used for "~"; empty means $HOME as Getenv
	// reads it.
	Home string
	// Getenv reads environment variables (HOME, XDG_*); nil means os.Getenv.
	Getenv func(string) string
	// GOOS picks the platform folders; empty means runtime.GOOS.
	GOOS string
}

func (o *Options) home() (string, error) {
	if o != nil && o.Home != "" {
		return o.Home, nil
	}
	if h := o.getenv("HOME"); h != "" {
		return h, nil
	}
	return "", ErrNoHome
}

func (o *Options) getenv(k string) string {
	if o != nil && o.Getenv != nil {
		return o.Getenv(k)
	}
	return os.Getenv(k)
}

func (o *Options) goos() string {
	if o != nil && o.GOOS != "" {
		return o.GOOS
	}
	return runtime.GOOS
}

// xdg returns $env when it is an absolute path (the XDG spec says to ignore
// relative ones), else home joined with fallback.
func (o *Options) xdg(env, fallback string) (string, error) {
	if v := o.getenv(env); filepath.IsAbs(v) {
		return filepath.Join(v, "wraptool"), nil
	}
	h, err := o.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, fallback, "wraptool"), nil
}

// ConfigDir is wraptool's per-user config folder:
// ~/.config/wraptool on Linux (honouring XDG_CONFIG_HOME) and
// ~/Library/Application Support/wraptool on macOS.
func ConfigDir(o *Options) (string, error) {
	if o.goos() == "darwin" {
		return o.xdg("", "Library/Application Support")
	}
	return o.xdg("XDG_CONFIG_HOME", ".config")
}

// DataDir is wraptool's per-user data folder, where the request log lives by
// default: ~/.local/share/wraptool (XDG_DATA_HOME) or the macOS equivalent.
func DataDir(o *Options) (string, error) {
	if o.goos() == "darwin" {
		return o.xdg("", "Library/Application Support")
	}
	return o.xdg("XDG_DATA_HOME", ".local/share")
}

// CacheDir is wraptool's per-user cache folder: ~/.cache/wraptool
// (XDG_CACHE_HOME) or ~/Library/Caches/wraptool on macOS.
func CacheDir(o *Options) (string, error) {
	if o.goos() == "darwin" {
		return o.xdg("", "Library/Caches")
	}
	return o.xdg("XDG_CACHE_HOME", ".cache")
}

// DefaultPath is the config file used when neither --config nor
// WRAPTOOL_CONFIG names one.
func DefaultPath(o *Options) (string, error) {
	dir, err := ConfigDir(o)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "config.yaml"), nil
}

// ExpandHome replaces a leading "~" or "~/" with the home directory. Other
// paths, including "~user", are returned unchanged.
func ExpandHome(path string, o *Options) (string, error) {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path, nil
	}
	h, err := o.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, path[1:]), nil
}
