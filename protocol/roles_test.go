package protocol_test

import (
	"testing"

	"github.com/pilotdesk/pilotdesk/protocol"
)

// TestEveryClientMessageHasARole: a message type added to the decoder's
// table without a role decision would fall to owner only; the table of
// roles must name it.
func TestEveryClientMessageHasARole(t *testing.T) {
	want := map[string]string{
		protocol.TypePing: protocol.RoleViewer, protocol.TypeSubscribe: protocol.RoleViewer,
		protocol.TypeUnsubscribe: protocol.RoleViewer, protocol.TypeList: protocol.RoleViewer,
		protocol.TypeSend: protocol.RoleController, protocol.TypeAbort: protocol.RoleController,
		protocol.TypeSetMode: protocol.RoleController, protocol.TypeUserInputResponse: protocol.RoleController,
		protocol.TypeClose: protocol.RoleController, protocol.TypeDelete: protocol.RoleOwner,
		protocol.TypeDiff: protocol.RoleViewer, protocol.TypeRestore: protocol.RoleController,
		protocol.TypeWorkspaces: protocol.RoleViewer,
	}
	for _, typ := range protocol.ClientTypes() {
		need, ok := want[typ]
		if !ok {
			t.Errorf("%s: no role decided in this test (and in roles.go)", typ)
			continue
		}
		if got := protocol.RequiredRole(typ); got != need {
			t.Errorf("%s needs %s, want %s", typ, got, need)
		}
		for _, role := range protocol.Roles() {
			allowed := protocol.RoleAllows(role, typ)
			wantAllowed := role == need || role == protocol.RoleOwner || (role == protocol.RoleController && need == protocol.RoleViewer)
			if allowed != wantAllowed {
				t.Errorf("RoleAllows(%s, %s) = %v, want %v", role, typ, allowed, wantAllowed)
			}
		}
	}
	if protocol.RoleAllows("", protocol.TypePing) || protocol.RoleAllows("admin", protocol.TypePing) {
		t.Error("an unknown role may send nothing")
	}
}

func TestClientKind(t *testing.T) {
	for in, want := range map[string]string{"window": "window", "terminal": "terminal", "web": "web", "": "other", "WEB": "other", "phone": "other"} {
		if got := protocol.ClientKind(in); got != want {
			t.Errorf("ClientKind(%q) = %q, want %q", in, got, want)
		}
	}
}
