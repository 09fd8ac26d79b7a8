package config

import "reflect"

// SameDestination reports whether a and b declare the same server in the
// same way — everything but where they are written in the file. A reload
// keeps the child and sessions of a destination that stayed the same.
func SameDestination(a, b *Destination) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	x.Line, y.Line = 0, 0
	x.Auth, y.Auth = withoutLine(a.Auth), withoutLine(b.Auth)
	return reflect.DeepEqual(x, y)
}

// SameButTools reports whether a and b declare the same server in the
// same way but for which of its tools they show ('tools:'): a reload
// applies such a change to the running child (its sessions are told the
// list changed).
func SameButTools(a, b *Destination) bool {
	if a == nil || b == nil {
		return false
	}
	x := *a
	x.Tools = b.Tools
	return SameDestination(&x, b)
}

// SameButCredentials reports whether a and b declare the same server with
// a child per user in the same way but for what each user supplies
// ('credentials:'): a reload keeps the destination and restarts only the
// children of the users whose environment (or missing list) changes.
func SameButCredentials(a, b *Destination) bool {
	if a == nil || b == nil || a.Isolation != IsolationUser {
		return false
	}
	x := *a
	x.Credentials = b.Credentials
	return SameDestination(&x, b)
}

// withoutLine is a copy of a without its position in the file.
func withoutLine(a *Auth) *Auth {
	if a == nil {
		return nil
	}
	c := *a
	c.Line = 0
	return &c
}

// SameAuth reports whether a and b protect alike, wherever in the file.
func SameAuth(a, b *Auth) bool { return sameButLine(a, b, func(x *Auth) { x.Line = 0 }) }

// SameProfile reports whether a and b declare a profile alike, wherever
// in the file.
func SameProfile(a, b *Profile) bool { return sameButLine(a, b, func(x *Profile) { x.Line = 0 }) }

// sameButLine compares *a and *b with clear applied to copies of each.
func sameButLine[T any](a, b *T, clear func(*T)) bool {
	if a == nil || b == nil {
		return a == b
	}
	x, y := *a, *b
	clear(&x)
	clear(&y)
	return reflect.DeepEqual(x, y)
}
