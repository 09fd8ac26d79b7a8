package config

// platformCommands are Windows's (command_pathext.go).
var platformCommands = windowsCommands
