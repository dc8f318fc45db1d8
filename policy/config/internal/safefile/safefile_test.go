package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCreateExclusiveLosesRaceWithoutClobbering(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err := CreateExclusive(path, []byte("second\n"))
	if err != nil || created {
		t.Fatalf("createExclusive = %v, %v; want false, nil", created, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "first\n" {
		t.Errorf("file = %q, want the first writer's", got)
	}
}
