package requests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// Read folds the log at path as FoldKeyed does, with the grants key beside
// it (LoadKey: none when missing, an error when unusable); a missing file
// is an empty log.
func Read(path string) ([]*Record, []Warning, error) {
	return read(path, nil)
}

// read is Read; used, when not nil, is shared with the fold (see
// folder.used).
func read(path string, used map[string]time.Time) ([]*Record, []Warning, error) {
	f, err := jsonl.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return []*Record{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read request log: %w", err)
	}
	defer f.Close()
	key, err := LoadKey(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read request log %s: %w", path, err)
	}
	fo := newFolder(true, key)
	if used != nil {
		fo.used = used
	}
	err = fo.addAll(f)
	recs, warns := fo.records, fo.warns
	if err != nil {
		return nil, warns, fmt.Errorf("read request log %s: %w", path, err)
	}
	if recs == nil {
		recs = []*Record{}
	}
	return recs, warns, nil
}

// Submit records a request in the log at path, as Open(path).Submit does.
// It reads the whole file; a writer that submits again and again (the
// server) keeps a Log instead.
func Submit(ctx context.Context, path string, req Request, now time.Time) (Submitted, error) {
	return Open(path).Submit(ctx, req, now)
}

// Decide records a decision in the log at path, as Open(path).Decide does.
// It reads the whole file; the CLI and the admin UI decide too rarely to
// keep a Log.
func Decide(ctx context.Context, path, id string, d Decision, now time.Time) error {
	return Open(path).Decide(ctx, id, d, now)
}
