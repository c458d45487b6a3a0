package relay_test

import (
	"reflect"
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
	"github.com/pilotdesk/pilotdesk/relay/checkpoint"
)

// The checkpoint store's files are protocol.ChangedFile, status for status
// and field for field: the relay passes them on as they are. The store
// keeps a type of its own, as the relay's storage imports no wire types
// (docs/ARCHITECTURE.md), so this test is what keeps the two one shape.
func TestCheckpointFilesAreTheProtocols(t *testing.T) {
	for _, s := range [][2]string{
		{checkpoint.Added, protocol.FileAdded},
		{checkpoint.Modified, protocol.FileModified},
		{checkpoint.Deleted, protocol.FileDeleted},
		{checkpoint.Skipped, protocol.FileSkipped},
		{checkpoint.Failed, protocol.FileFailed},
	} {
		if s[0] != s[1] {
			t.Errorf("the store names a status %q where the protocol says %q", s[0], s[1])
		}
	}
	exported := func(typ reflect.Type) []reflect.StructField {
		var out []reflect.StructField
		for f := range typ.Fields() {
			if f.IsExported() {
				f.Index, f.Offset = nil, 0
				out = append(out, f)
			}
		}
		return out
	}
	store, wire := exported(reflect.TypeFor[checkpoint.File]()), exported(reflect.TypeFor[protocol.ChangedFile]())
	if !reflect.DeepEqual(store, wire) {
		t.Errorf("checkpoint.File's fields %+v\nare not protocol.ChangedFile's %+v", store, wire)
	}
}
