package credstore

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a record may hold: the limits are written here once.
const (
	// MaxVars is the most variables one record holds.
	MaxVars = 32
	// MaxValueBytes is the longest value.
	MaxValueBytes = 64 << 10
	// MaxNameBytes is the longest variable name.
	MaxNameBytes = 256
	// maxDestBytes, maxUserBytes and maxDisplayBytes bound the record's
	// key and its display name.
	maxDestBytes    = 255
	maxUserBytes    = 1024
	maxDisplayBytes = 256
)

// namePattern is what ValidName accepts, for messages.
const namePattern = "[A-Z_][A-Z0-9_]*"

// ValidName reports whether name can be a credential variable's name:
// [A-Z_][A-Z0-9_]*, at most MaxNameBytes (what a destination's
// `credentials:` may declare).
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameBytes {
		return false
	}
	return badNameByte(name) < 0
}

// badNameByte is the index of name's first byte outside the name grammar,
// or -1.
func badNameByte(name string) int {
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return i
		}
	}
	return -1
}

// nameError says why name is not a variable name without echoing it (a
// name that is not one may be a value typed in the wrong field).
func nameError(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: a variable has an empty name (names are %s)", ErrInvalid, namePattern)
	case len(name) > MaxNameBytes:
		return fmt.Errorf("%w: a variable name is %d bytes, more than %d", ErrInvalid, len(name), MaxNameBytes)
	}
	return fmt.Errorf("%w: a variable name is not of the form %s (byte %d of %d is not A-Z, _ or a digit after the first)",
		ErrInvalid, namePattern, badNameByte(name)+1, len(name))
}

// valueError says why the value of the variable name cannot be stored, or
// is nil; never echoing the value.
func valueError(name, value string) error {
	if len(value) > MaxValueBytes {
		return fmt.Errorf("%w: the value of %s is %d bytes, more than %d", ErrInvalid, name, len(value), MaxValueBytes)
	}
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("%w: the value of %s holds a NUL byte, which an environment cannot carry", ErrInvalid, name)
	}
	return nil
}

// checkVars validates a set to store.
func checkVars(vars map[string]string) error {
	if len(vars) == 0 {
		return fmt.Errorf("%w: no variables given (to remove a user's credentials, Delete them)", ErrInvalid)
	}
	if len(vars) > MaxVars {
		return fmt.Errorf("%w: %d variables, more than %d", ErrInvalid, len(vars), MaxVars)
	}
	for name, value := range vars {
		if !ValidName(name) {
			return nameError(name)
		}
		if err := valueError(name, value); err != nil {
			return err
		}
	}
	return nil
}

// checkRecordKey validates a record's (destination, user).
func checkRecordKey(dest, user string) error {
	switch {
	case dest == "":
		return fmt.Errorf("%w: no destination named", ErrInvalid)
	case len(dest) > maxDestBytes:
		return fmt.Errorf("%w: a destination name of %d bytes, more than %d", ErrInvalid, len(dest), maxDestBytes)
	case user == "":
		return fmt.Errorf("%w: no user named (the auth layer's user key)", ErrInvalid)
	case len(user) > maxUserBytes:
		return fmt.Errorf("%w: a user key of %d bytes, more than %d", ErrInvalid, len(user), maxUserBytes)
	}
	return nil
}

// checkDisplay validates a display name: shown in the console and in
// logs, so printable UTF-8 of at most maxDisplayBytes.
func checkDisplay(display string) error {
	if len(display) > maxDisplayBytes {
		return fmt.Errorf("%w: a display name of %d bytes, more than %d", ErrInvalid, len(display), maxDisplayBytes)
	}
	if !utf8.ValidString(display) {
		return fmt.Errorf("%w: the display name is not UTF-8", ErrInvalid)
	}
	if strings.IndexFunc(display, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Errorf("%w: the display name holds a control character", ErrInvalid)
	}
	return nil
}
