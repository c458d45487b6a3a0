package acp

import (
	"context"
	"sync/atomic"

	sdk "github.com/coder/acp-go-sdk"
)

// router is the client side of one agent process's connection: it hands
// what the agent sends to the session it names. The SDK calls SessionUpdate
// for one notification at a time, in order, and each request (permission)
// on a goroutine of its own.
type router struct {
	a *Agent
	// p is the process this router serves, set once it started; traffic
	// of a process a session no longer lives in is dropped.
	p atomic.Pointer[process]
	// order keeps the agent's requests behind its notifications.
	order orderer
}

var _ sdk.Client = (*router)(nil)

func (r *router) session(id sdk.SessionId) (*Session, *process) {
	p := r.p.Load()
	if p == nil {
		return nil, nil
	}
	s := r.a.lookup(id)
	if s == nil {
		r.a.log.Debug("acp: traffic for a session that is not open", "session", id)
		return nil, nil
	}
	return s, p
}

// SessionUpdate queues the update for the session's pump and returns at
// once (see workQueue for why).
func (r *router) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	s, p := r.session(n.SessionId)
	if s != nil {
		s.onUpdate(p, n.Update)
	}
	r.order.handledOne()
	return nil
}

// RequestPermission is answered by the session from the conversation's
// mode; a request for a session that is not open is cancelled, which the
// agents treat as a denial.
func (r *router) RequestPermission(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	s, p := r.session(req.SessionId)
	if s == nil {
		return cancelledOutcome(), nil
	}
	// The tool_call and the text before the request come first.
	r.order.wait(ctx)
	return s.onPermission(ctx, p, req), nil
}

// The file system and terminal methods are not advertised in initialize, so
// an agent has no business calling them.

func (r *router) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (r *router) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (r *router) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (r *router) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (r *router) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (r *router) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (r *router) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}
