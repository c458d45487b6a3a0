package acp

import (
	"testing"

	sdk "github.com/coder/acp-go-sdk"
)

// TestPickOption: by kind, never always; of several rejections one that
// lets the turn go on; an agent's only rejection even if it stops the turn.
func TestPickOption(t *testing.T) {
	t.Parallel()
	opt := func(id, name string, kind sdk.PermissionOptionKind) sdk.PermissionOption {
		return sdk.PermissionOption{OptionId: sdk.PermissionOptionId(id), Name: name, Kind: kind}
	}
	codex := []sdk.PermissionOption{
		opt("approved", "Yes, proceed", sdk.PermissionOptionKindAllowOnce),
		opt("approved-execpolicy-amendment", "Yes, and don't ask again", sdk.PermissionOptionKindAllowAlways),
		opt("abort", "No, and tell Codex what to do differently", sdk.PermissionOptionKindRejectOnce),
	}
	several := []sdk.PermissionOption{
		opt("cancel", "Cancel", sdk.PermissionOptionKindRejectOnce),
		opt("reject", "No, keep going", sdk.PermissionOptionKindRejectOnce),
		opt("allow", "Allow", sdk.PermissionOptionKindAllowOnce),
	}
	cases := []struct {
		opts []sdk.PermissionOption
		want sdk.PermissionOptionKind
		id   string
	}{
		{codex, sdk.PermissionOptionKindAllowOnce, "approved"},
		{codex, sdk.PermissionOptionKindRejectOnce, "abort"},
		{several, sdk.PermissionOptionKindRejectOnce, "reject"},
		{several, sdk.PermissionOptionKindAllowOnce, "allow"},
	}
	for _, c := range cases {
		got, ok := pickOption(c.opts, c.want)
		if !ok || string(got.OptionId) != c.id {
			t.Errorf("pickOption(%s) = %q, %v; want %q", c.want, got.OptionId, ok, c.id)
		}
	}
	if _, ok := pickOption(codex[:2], sdk.PermissionOptionKindRejectOnce); ok {
		t.Error("a rejection picked where none is offered")
	}
}
