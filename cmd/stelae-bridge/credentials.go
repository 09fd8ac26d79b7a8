package main

import (
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
)

// credentialsKeyFile and credentialsDB are the encrypted store of users'
// credentials in the state directory (its key may be a systemd credential
// of the key file's name instead).
const (
	credentialsKeyFile = "credentials.key"
	credentialsDB      = "credentials.db"
)

// usesCredentials reports whether a destination declares 'credentials:'.
func usesCredentials(cfg *config.Config) bool {
	for _, d := range cfg.Destinations {
		if len(d.Credentials) > 0 {
			return true
		}
	}
	return false
}

// openCredentials opens the encrypted store of what users enter for
// their children, when a destination declares credentials (nil
// otherwise). It says where the key came from: a systemd credential of
// another name than expected would otherwise quietly make a key file.
func openCredentials(cfg *config.Config, s *settings, getenv func(string) string, log hclog.Logger) (*credstore.Store, error) {
	if !usesCredentials(cfg) {
		return nil, nil
	}
	keyPath := s.credentialsKey
	if keyPath == "" {
		keyPath = filepath.Join(s.stateDir, credentialsKeyFile)
	}
	key, err := credstore.LoadKey(keyPath, getenv(credstore.CredentialsDirEnv))
	if err != nil {
		return nil, err
	}
	store, err := credstore.Open(filepath.Join(s.stateDir, credentialsDB), key, credstore.Options{})
	if err != nil {
		return nil, err
	}
	log.Info("users' credentials are kept encrypted", "key", key.Source(), "key_id", key.ID())
	return store, nil
}
