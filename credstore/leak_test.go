package credstore

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// printed is v in every verb and flag a log line or an error might use.
func printed(v any) string {
	var b strings.Builder
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		fmt.Fprintf(&b, f+"\n", v)
	}
	if j, err := json.Marshal(v); err == nil {
		b.Write(j)
	}
	var sl bytes.Buffer
	slog.New(slog.NewTextHandler(&sl, nil)).Info("x", "v", v)
	slog.New(slog.NewJSONHandler(&sl, nil)).Info("x", "v", v)
	b.Write(sl.Bytes())
	return b.String()
}

// keyForms are the forms the key's bytes might take when printed.
func keyForms(raw []byte) []string {
	return []string{string(raw), hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)),
		base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw),
		fmt.Sprint(raw), fmt.Sprintf("%#v", raw), strings.Trim(fmt.Sprint(raw), "[]")}
}

// A Key shows no bytes however it is printed, marshalled or logged —
// neither itself nor inside a struct that holds it.
func TestKeyRedacted(t *testing.T) {
	k, raw := testKey(t)
	type holder struct {
		Key   Key
		inner Key
		ptr   *Key
	}
	for name, v := range map[string]any{"Key": k, "*Key": &k, "holder": holder{k, k, &k}, "*holder": &holder{k, k, &k}} {
		out := printed(v)
		for _, form := range keyForms(raw) {
			if strings.Contains(out, form) {
				t.Errorf("%s printed shows the key's bytes:\n%s", name, out)
			}
		}
		if !strings.Contains(out, "credstore.Key(redacted)") {
			t.Errorf("%s printed does not say redacted:\n%s", name, out)
		}
	}
	if s := fmt.Sprintf("%v|%s|%#v|%x|%d", k, k, k, k, k); s != strings.Repeat("credstore.Key(redacted)|", 4)+"credstore.Key(redacted)" {
		t.Errorf("Key prints %q", s)
	}
	if j, _ := json.Marshal(k); string(j) != `"credstore.Key(redacted)"` {
		t.Errorf("Key marshals as %s", j)
	}
}

// No error the store makes, and no printing of a Store, an Entry or a
// Problem, holds a value.
func TestNoValueInErrorsOrPrints(t *testing.T) {
	const planted = "PLANTED-leak-7d2e91"
	s, path, _ := openTest(t)
	vars := map[string]string{"TOKEN": planted + "-token", "OTHER": planted + "-other"}
	if err := s.Set("github", "alice", "Alice", vars); err != nil {
		t.Fatal(err)
	}

	var errs []error
	add := func(err error) {
		if err == nil {
			t.Fatalf("no error where one was made (after %d)", len(errs))
		}
		errs = append(errs, err)
	}
	add(s.Set("d", "u", "", map[string]string{"TOKEN": planted + strings.Repeat("x", MaxValueBytes)}))
	add(s.Set("d", "u", "", map[string]string{"TOKEN": planted + "\x00"}))
	add(s.Set("d", "u", "", map[string]string{planted: "v"}))
	// moved, damaged and another key's records
	rec := rawRecord(t, s, "github", "alice")
	putRecord(t, s, "github", "bob", rec)
	_, _, err := s.Env("github", "bob")
	add(err)
	rec["dest"], rec["user"] = "github", "carol"
	putRecord(t, s, "github", "carol", rec)
	_, _, err = s.Env("github", "carol")
	add(err)
	entries, err := s.List("github")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Err != nil {
			errs = append(errs, e.Err)
		}
	}
	s.Close()
	other, _ := testKey(t)
	s2, err := Open(path, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = s2.Env("github", "alice")
	add(err)
	s2.Close()
	problems, _ := Check(map[string]string{"TOKEN": planted, planted: planted, "OTHER": planted + "\x00"},
		[]Spec{{Name: "TOKEN", Pattern: "ghp_.*", Required: true}, {Name: "OTHER"}})
	if len(problems) != 3 {
		t.Fatalf("Check: %v", problems)
	}
	_, err = Check(map[string]string{"TOKEN": planted}, []Spec{{Name: "TOKEN", Pattern: "("}})
	add(err)

	for _, e := range errs {
		if strings.Contains(e.Error(), "PLANTED") || strings.Contains(printed(e), "PLANTED") {
			t.Errorf("error shows a value: %v", e)
		}
	}
	if !errors.Is(errs[3], ErrMisplaced) || !errors.Is(errs[4], ErrDamaged) || !errors.Is(errs[len(errs)-2], ErrOtherKey) {
		t.Errorf("not the errors meant: %v", errs)
	}
	for name, v := range map[string]any{"*Store": s, "Store": *s, "Entry": entries[0], "[]Entry": entries, "Problem": problems[0], "[]Problem": problems} {
		if out := printed(v); strings.Contains(out, "PLANTED") {
			t.Errorf("%s printed shows a value:\n%s", name, out)
		}
	}
}
