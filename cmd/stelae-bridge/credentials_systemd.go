package main

import (
	"io/fs"
	"path/filepath"

	"github.com/stelae-bridge/stelae-bridge/credstore"
)

// This file takes the bridge's secrets from systemd's credentials
// (LoadCredential=NAME:PATH in the unit; the service reads them from
// $CREDENTIALS_DIRECTORY/NAME), so that no secret sits in the unit file
// or in the environment: the tokens file as "auth-tokens", the built-in
// authorization server's passphrase as "oauth-passphrase" (and the users'
// credentials key as "credentials.key", which package credstore reads).
// A flag or variable given for one wins over its credential.

// credentialsDirVar names systemd's credentials directory; children do
// not inherit it (systemdVars).
const credentialsDirVar = credstore.CredentialsDirEnv

// The credentials' names.
const (
	credAuthTokens = "auth-tokens"
	credPassphrase = "oauth-passphrase"
)

// systemdCredentials points s at the credentials systemd loaded, for what
// no flag or variable gave.
func systemdCredentials(s *settings, getenv func(string) string, stat func(string) (fs.FileInfo, error)) {
	dir := getenv(credentialsDirVar)
	if dir == "" {
		return
	}
	if s.authTokensFile == "" {
		if p := filepath.Join(dir, credAuthTokens); exists(stat, p) {
			s.authTokensFile = p
		}
	}
	if s.passphrase == "" && s.passphraseFile == "" {
		if p := filepath.Join(dir, credPassphrase); exists(stat, p) {
			s.passphraseFile = p
		}
	}
}

func exists(stat func(string) (fs.FileInfo, error), path string) bool {
	st, err := stat(path)
	return err == nil && st.Mode().IsRegular()
}
