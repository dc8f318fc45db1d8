package proctree

import (
	"bytes"
	"errors"
	"strconv"
)

// errStat says a /proc/PID/stat line could not be parsed.
var errStat = errors.New("malformed stat line")

// parseStat reads pid, ppid, pgrp and starttime from one /proc/PID/stat
// line (proc(5)). The command name between the parentheses is whatever
// the process chose (spaces, parentheses, newlines), so the fields are read
// after the LAST ')': nothing after it can hold one. A pid below 1 or a
// field that is not a plain decimal number is refused.
func parseStat(b []byte) (Proc, error) {
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 1 || closing < open || b[open-1] != ' ' {
		return Proc{}, errStat
	}
	pid, err := decimal(b[:open-1])
	if err != nil || pid < 1 {
		return Proc{}, errStat
	}
	// After ") ": state (field 3), ppid (4), pgrp (5), ... starttime (22).
	f := bytes.Fields(b[closing+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, errStat
	}
	ppid, err1 := decimal(f[1])
	pgrp, err2 := decimal(f[2])
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Proc{}, errStat
	}
	return Proc{PID: pid, PPID: ppid, PGID: pgrp, Start: start}, nil
}

// decimal parses a non-negative int written in plain digits (no sign,
// which ParseInt would accept).
func decimal(b []byte) (int, error) {
	if len(b) == 0 || b[0] < '0' || b[0] > '9' {
		return 0, errStat
	}
	n, err := strconv.ParseInt(string(b), 10, 32)
	return int(n), err
}
