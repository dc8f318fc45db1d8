package requests

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
)

// newID draws req_ and 8 lowercase hex digits from crypto/rand, avoiding ids
// already used.
func newID(used map[string]string) (string, error) {
	for range 100 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		id := "req_" + hex.EncodeToString(b[:])
		if _, ok := used[id]; !ok {
			return id, nil
		}
	}
	return "", errors.New("request log: could not draw an unused id")
}
