package natstest

// PickPorts replaces how Start chooses its nodes' ports.
func PickPorts(f func(t TB, n int) []int) Option {
	return func(o *settings) { o.pickPorts = f }
}
