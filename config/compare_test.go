package config

import "testing"

func TestSameDestination(t *testing.T) {
	parse := func(src string) *Config {
		t.Helper()
		c, err := Parse("d.yaml", []byte(src), func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	base := parse("destinations:\n  a:\n    command: cat\n    args: [x]\n    auth: {issuer: https://issuer.example}\n")
	moved := parse("# a comment moves it\n\ndestinations:\n  a:\n    command: cat\n    args: [x]\n    auth: {issuer: https://issuer.example}\n")
	if !SameDestination(base.Destinations["a"], moved.Destinations["a"]) {
		t.Error("a destination written lower in the file is not the same")
	}
	for name, src := range map[string]string{
		"args":  "destinations:\n  a:\n    command: cat\n    args: [y]\n    auth: {issuer: https://issuer.example}\n",
		"env":   "destinations:\n  a:\n    command: cat\n    args: [x]\n    env: {K: v}\n    auth: {issuer: https://issuer.example}\n",
		"auth":  "destinations:\n  a:\n    command: cat\n    args: [x]\n    auth: {issuer: https://other.example}\n",
		"tools": "destinations:\n  a:\n    command: cat\n    args: [x]\n    tools: {deny: [t]}\n    auth: {issuer: https://issuer.example}\n",
	} {
		if SameDestination(base.Destinations["a"], parse(src).Destinations["a"]) {
			t.Errorf("a change of %s is not seen", name)
		}
		// Only a change of 'tools:' can be applied to the running child.
		if got := SameButTools(base.Destinations["a"], parse(src).Destinations["a"]); got != (name == "tools") {
			t.Errorf("SameButTools after a change of %s = %v", name, got)
		}
	}
}

func TestSameProfileAndAuth(t *testing.T) {
	p := &Profile{Name: "p", Line: 3, Destinations: []string{"a", "b"}}
	moved := &Profile{Name: "p", Line: 9, Destinations: []string{"a", "b"}}
	other := &Profile{Name: "p", Line: 3, Destinations: []string{"b", "a"}}
	if !SameProfile(p, moved) || SameProfile(p, other) || SameProfile(p, nil) || !SameProfile(nil, nil) {
		t.Error("SameProfile: a profile moved in the file is the same; its members in another order are not")
	}
	a, b := &Auth{Issuer: "https://i.example", Line: 1}, &Auth{Issuer: "https://i.example", Line: 7}
	if !SameAuth(a, b) || SameAuth(a, &Auth{Issuer: "https://j.example"}) || SameAuth(a, nil) {
		t.Error("SameAuth")
	}
}
