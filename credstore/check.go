package credstore

import (
	"fmt"
	"regexp"
	"slices"
)

// Spec is one variable a destination asks each user for (the config
// layer maps a destination's `credentials:` onto Specs).
type Spec struct {
	// Name is the environment variable (ValidName).
	Name string
	// Description tells the user what to give (shown on the page and in
	// Problems).
	Description string
	// Pattern, when set, is a Go regexp (RE2 syntax: matching is linear in
	// the value) the whole value must match.
	Pattern string
	// Required: the variable must be given, not empty.
	Required bool
}

// Reason is why a variable is a Problem.
type Reason int

const (
	// Missing: a Required variable not given, or given empty.
	Missing Reason = iota + 1
	// Mismatch: a value that does not match its Spec's Pattern.
	Mismatch
	// Undeclared: a variable no Spec declares.
	Undeclared
	// Unstorable: a value the store refuses (too long, a NUL byte).
	Unstorable
)

func (r Reason) String() string {
	switch r {
	case Missing:
		return "required and not given"
	case Mismatch:
		return "does not have the expected form"
	case Undeclared:
		return "not a variable this destination asks for"
	case Unstorable:
		return fmt.Sprintf("not storable (a value is at most %d bytes, without NUL)", MaxValueBytes)
	}
	return "invalid"
}

// Problem is a variable Check found wrong: its name (for an undeclared one
// that is not a variable name, "" — it may be a value typed in the wrong
// field), why, and the Spec's description. It never holds the value.
type Problem struct {
	Name        string
	Reason      Reason
	Description string
}

func (p Problem) String() string {
	name := p.Name
	if name == "" {
		name = "a variable with an invalid name"
	}
	if p.Description == "" {
		return name + ": " + p.Reason.String()
	}
	return name + ": " + p.Reason.String() + " (" + p.Description + ")"
}

// Check is what is wrong with vars (what a user sent) against specs (what
// the destination asks for): in specs' order the missing, mismatched and
// unstorable variables, then the undeclared ones by name; none when vars
// can be Set. The error is for specs themselves (a name that is not
// ValidName, a name twice, more than MaxVars, a pattern that does not
// compile), naming the spec. Patterns match the whole value. Neither ever
// holds a value.
func Check(vars map[string]string, specs []Spec) ([]Problem, error) {
	if len(specs) > MaxVars {
		return nil, fmt.Errorf("credentials: %d variables declared, more than %d", len(specs), MaxVars)
	}
	var problems []Problem
	declared := make(map[string]bool, len(specs))
	for _, sp := range specs {
		if !ValidName(sp.Name) {
			return nil, fmt.Errorf("credentials: %q is not a variable name (names are %s, at most %d bytes)", sp.Name, namePattern, MaxNameBytes)
		}
		if declared[sp.Name] {
			return nil, fmt.Errorf("credentials: %s is declared twice", sp.Name)
		}
		declared[sp.Name] = true
		re, err := compilePattern(sp.Pattern)
		if err != nil {
			return nil, fmt.Errorf("credentials: the pattern of %s does not compile as a Go regexp: %w", sp.Name, err)
		}
		v := vars[sp.Name]
		switch {
		case v == "":
			if sp.Required {
				problems = append(problems, Problem{sp.Name, Missing, sp.Description})
			}
		case valueError(sp.Name, v) != nil:
			problems = append(problems, Problem{sp.Name, Unstorable, sp.Description})
		case re != nil && !re.MatchString(v):
			problems = append(problems, Problem{sp.Name, Mismatch, sp.Description})
		}
	}
	var extra []string
	for name := range vars {
		if !declared[name] {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		if !ValidName(name) {
			name = ""
		}
		problems = append(problems, Problem{Name: name, Reason: Undeclared})
	}
	return problems, nil
}

// compilePattern compiles p to match a whole value; nil for none. p must
// compile alone first: wrapped in \A(?:…)\z only, an unbalanced p such as
// "x)|(.*" would escape the anchors.
func compilePattern(p string) (*regexp.Regexp, error) {
	if p == "" {
		return nil, nil
	}
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(`\A(?:` + p + `)\z`)
}
