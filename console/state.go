package console

import "time"

// Backend is what the console reads and asks of the bridge. The bridge
// implements it over its routing table; every method is safe for
// concurrent use and returns promptly (no child is waited for).
type Backend interface {
	// Destinations describes each destination (Calls and rates are the
	// console's own, from the tail).
	Destinations() []Destination
	// Profiles describes each profile.
	Profiles() []Profile
	// Clients lists the built-in authorization server's clients; enabled
	// is false when it is not running.
	Clients() (clients []Client, enabled bool, err error)
	// RevokeClient, EndSession and Restart are the actions; their errors
	// are shown to the operator as they are. Restart also says what it
	// did (a destination with no child running restarts nothing).
	RevokeClient(id string) error
	EndSession(destination, session string) error
	Restart(destination string) (string, error)
	// StopUser stops a user's child of a user-isolated destination (their
	// sessions end); DeleteCredentials deletes what the user entered for
	// it (and stops their child, which had them). user is User.Key.
	StopUser(destination, user string) error
	DeleteCredentials(destination, user string) error
	// PeopleBackend manages the built-in server's users (people.go).
	PeopleBackend
}

// State is what the page shows, as one JSON document (GET
// /console/api/state, and each "state" event).
type State struct {
	Bridge         BridgeInfo    `json:"bridge"`
	Destinations   []Destination `json:"destinations"`
	Profiles       []Profile     `json:"profiles"`
	ClientsEnabled bool          `json:"clients_enabled"`
	Clients        []Client      `json:"clients"`
	// ClientsError says why the clients could not be read.
	ClientsError string `json:"clients_error,omitempty"`
	// PeopleEnabled: the built-in server runs, and People are its users
	// (never an invite's link); PeopleError says why they could not be
	// read.
	PeopleEnabled bool     `json:"people_enabled"`
	People        []Person `json:"people"`
	PeopleError   string   `json:"people_error,omitempty"`
}

// BridgeInfo describes the bridge itself.
type BridgeInfo struct {
	Version   string    `json:"version"`
	Auth      string    `json:"auth"`
	PublicURL string    `json:"public_url,omitempty"`
	Now       time.Time `json:"now"`
}

// Destination is one destination's child, sessions, traffic and tools.
type Destination struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Isolation string `json:"isolation"`
	// Sandbox is what its child may take ("memory 512MiB, processes
	// 64"); "" for none.
	Sandbox string `json:"sandbox,omitempty"`
	// SandboxHeld says what holds the running child's sandbox here
	// ("files by Landlock ABI 7; …"), SandboxNotHeld what is not held
	// (best_effort) and why; "" when no child runs or none is.
	SandboxHeld    string `json:"sandbox_held,omitempty"`
	SandboxNotHeld string `json:"sandbox_not_held,omitempty"`
	// ChildSpeaks is the protocol its running child is spoken to in
	// ("2025", "2026-07-28"); "" when none runs.
	ChildSpeaks    string  `json:"child_speaks,omitempty"`
	State          string  `json:"state"`
	PID            int     `json:"pid"`
	UptimeS        float64 `json:"uptime_s"`
	Restarts       uint64  `json:"restarts"`
	RecentRestarts int     `json:"recent_restarts"`
	LastExit       string  `json:"last_exit"`
	FailedReason   string  `json:"failed_reason"`
	StartingS      float64 `json:"starting_s"`
	NextRestartS   float64 `json:"next_restart_s"`
	Waiting        int     `json:"waiting"`
	Stopping       bool    `json:"stopping"`
	// Calls and Errors count the POSTs (errors: answered 4xx or 5xx)
	// since the bridge started; the rates are over the last second or so.
	Calls      uint64    `json:"calls"`
	Errors     uint64    `json:"errors"`
	CallsPerS  float64   `json:"calls_per_s"`
	ErrorsPerS float64   `json:"errors_per_s"`
	Sessions   []Session `json:"sessions"`
	ToolsKnown bool      `json:"tools_known"`
	Tools      []Tool    `json:"tools"`
	// Users are a user-isolated destination's users: those with a child,
	// and those with credentials set (none for another destination).
	Users []User `json:"users,omitempty"`
}

// Session is one live session.
type Session struct {
	ID              string `json:"id"`
	Client          string `json:"client"`
	ProtocolVersion string `json:"protocol_version"`
	Era             string `json:"era"`
	Principal       string `json:"principal"`
	// OAuthClient is the OAuth client whose token made Principal (the
	// client_id the auth layer saw, NoteClient), and OAuthClientName its
	// name in the built-in server's clients; empty when the principal is
	// not an OAuth one or made no request since the bridge started.
	OAuthClient     string  `json:"oauth_client,omitempty"`
	OAuthClientName string  `json:"oauth_client_name,omitempty"`
	AgeS            float64 `json:"age_s"`
	IdleS           float64 `json:"idle_s"`
	Inflight        int     `json:"inflight"`
	Streams         int     `json:"streams"`
}

// User is a user of a user-isolated destination ('isolation: user'): their
// child, and which credentials they have set — never a value.
type User struct {
	// Key names the user in the actions (a token's name, or a keyed
	// digest: no credential); Name is how the operator knows them.
	Key      string `json:"key"`
	Name     string `json:"name"`
	State    string `json:"state"`
	PID      int    `json:"pid"`
	Sessions int    `json:"sessions"`
	// Credentials are the names of the variables the user entered, and
	// CredentialsUpdated when (RFC 3339; "" for none).
	Credentials        []string `json:"credentials"`
	CredentialsUpdated string   `json:"credentials_updated,omitempty"`
}

// Tool is one tool of a destination's catalogue.
type Tool struct {
	Name    string `json:"name"`
	Allowed bool   `json:"allowed"`
}

// Profile is one profile and its members.
type Profile struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Members []string `json:"members"`
}

// Client is one OAuth client of the built-in server.
type Client struct {
	ID       string `json:"client_id"`
	Name     string `json:"client_name"`
	Source   string `json:"source"`
	Created  string `json:"created"`
	Approved string `json:"approved"`
	LastUsed string `json:"last_used"`
	Revoked  bool   `json:"revoked"`
}
