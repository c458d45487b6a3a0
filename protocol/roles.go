package protocol

import "time"

// Roles of a device token (docs/protocol.md, Devices and roles). The relay's
// own token is the owner token of the device OwnDevice.
const (
	RoleViewer     = "viewer"
	RoleController = "controller"
	RoleOwner      = "owner"
)

// OwnDevice is the device name of the relay's own token.
const OwnDevice = "this device"

// Client kinds a connection announces with the upgrade's ?client=.
const (
	ClientWindow   = "window"
	ClientTerminal = "terminal"
	ClientWeb      = "web"
	ClientOther    = "other"
)

// By names who did something: the device name of the connection's token
// and the kind of client it announced (answeredBy, sentBy).
type By struct {
	Device string `json:"device"`
	Client string `json:"client"`
}

// Roles lists the roles from the least to the most allowed.
func Roles() []string { return []string{RoleViewer, RoleController, RoleOwner} }

// ValidRole reports whether role is one of Roles.
func ValidRole(role string) bool {
	return role == RoleViewer || role == RoleController || role == RoleOwner
}

// ClientKind returns the kind a ?client= value names: one of the four, and
// ClientOther for anything else (absent included).
func ClientKind(v string) string {
	switch v {
	case ClientWindow, ClientTerminal, ClientWeb:
		return v
	}
	return ClientOther
}

// roleOf is the least role that may send each client message. A message
// missing here (none today) needs owner: a new message is refused to
// viewers and controllers until someone decides otherwise.
var roleOf = map[string]string{
	TypePing:              RoleViewer,
	TypeSubscribe:         RoleViewer,
	TypeUnsubscribe:       RoleViewer,
	TypeList:              RoleViewer,
	TypeWorkspaces:        RoleViewer,
	TypeSend:              RoleController,
	TypeAbort:             RoleController,
	TypeSetMode:           RoleController,
	TypeUserInputResponse: RoleController,
	TypeClose:             RoleController,
	TypeDelete:            RoleOwner,
	TypeDiff:              RoleViewer,
	TypeRestore:           RoleController,
}

// RoleAllows reports whether a connection of role may send msgType.
func RoleAllows(role, msgType string) bool {
	need, ok := roleOf[msgType]
	if !ok {
		need = RoleOwner
	}
	return rank(role) >= rank(need)
}

// RequiredRole is the least role that may send msgType.
func RequiredRole(msgType string) string {
	if need, ok := roleOf[msgType]; ok {
		return need
	}
	return RoleOwner
}

func rank(role string) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleController:
		return 2
	case RoleOwner:
		return 3
	}
	return 0
}

// TimeLayout is how the relay writes ExpiresAt and ServerTime: RFC 3339 in
// UTC with milliseconds, which every client's parser reads (JavaScript's
// Date.parse included).
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// FormatTime writes t as TimeLayout in UTC.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }
