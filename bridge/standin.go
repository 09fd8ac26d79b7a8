package bridge

import (
	"strings"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// standInFactory makes dispatchers whose child is launch's stand-in, as
// dispatcherFactory makes d's.
func (b *Bridge) standInFactory(d *config.Destination, launch supervisor.Launcher) func() *dispatch.Dispatcher {
	o := b.opts
	return func() *dispatch.Dispatcher {
		return dispatch.New(dispatch.Options{Name: d.Name, Launch: launch, NewBackOff: o.Restart.NewBackOff, StableAfter: o.Restart.StableAfter,
			Linger: o.Linger, UnclaimedLinger: o.UnclaimedLinger, RestartPatience: o.RestartPatience, StopTimeout: o.stopTimeout(),
			BridgeVersion: o.Version, Logger: o.Logger.Named("dispatch")})
	}
}

// credentialsURL is where a user of destination dest enters their
// credentials: the built-in server's page, when dest asks its users for
// them there and the bridge knows its public URL (the stand-in has no
// request to take a Host from); "" otherwise.
func (b *Bridge) credentialsURL(dest string) string {
	if b.opts.AuthServer == nil || b.opts.PublicURL == "" || (credentialPages{b}).declared(dest) == nil {
		return ""
	}
	return strings.TrimSuffix(b.opts.PublicURL, "/") + authserver.PathCredentials + "/" + dest
}
