package supervisor

// platformEnv is Windows's (env_windowsrules.go).
var platformEnv = windowsEnv
