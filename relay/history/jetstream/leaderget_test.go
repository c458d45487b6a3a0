package jetstream

import (
	"context"
	"testing"
)

// TestLeaderGetDeletedKey: leaderGet reads a key as the bucket's leader has
// it, and a deleted or purged key as one never written (revision 0), not as
// the delete marker's revision and empty value.
func TestLeaderGetDeletedKey(t *testing.T) {
	t.Parallel()
	_, nc := embedded(t)
	s := openEmbedded(t, nc, "lg", Options{})
	ctx := context.Background()
	kv, err := s.devicesKV(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, "k", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if e, err := s.leaderGet(ctx, kv, "k"); err != nil || string(e.value) != "v1" || e.rev != rev {
		t.Errorf("after Put: leaderGet = %+v, %v; want v1 at revision %d", e, err, rev)
	}
	if e, err := s.leaderGet(ctx, kv, "never"); err != nil || e.value != nil || e.rev != 0 {
		t.Errorf("a key never written: leaderGet = %+v, %v; want nothing at revision 0", e, err)
	}
	if err := kv.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if e, err := s.leaderGet(ctx, kv, "k"); err != nil || e.value != nil || e.rev != 0 {
		t.Errorf("after Delete: leaderGet = %+v, %v; want nothing at revision 0", e, err)
	}
	if _, err := kv.Put(ctx, "p", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	if e, err := s.leaderGet(ctx, kv, "p"); err != nil || e.value != nil || e.rev != 0 {
		t.Errorf("after Purge: leaderGet = %+v, %v; want nothing at revision 0", e, err)
	}
}
