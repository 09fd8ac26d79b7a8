package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/stelae-bridge/stelae-bridge/redact"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// lines reads every line of the trail's files, oldest file first.
func lines(t *testing.T, path string, keep int) []record {
	t.Helper()
	var out []record
	for i := keep; i >= 0; i-- {
		p := path
		if i > 0 {
			p = fmt.Sprintf("%s.%d", path, i)
		}
		data, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parse(t, data)...)
	}
	return out
}

func parse(t *testing.T, data []byte) []record {
	t.Helper()
	var out []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("a line that is not JSON: %v: %.300s", err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func entry(i int) session.AccessEntry {
	return session.AccessEntry{Time: time.Unix(1800000000, int64(i)), Destination: "files", Era: session.EraSession, Method: "tools/call",
		Tool: "read", RPCID: fmt.Sprint(i), Status: 200, Latency: 1500 * time.Microsecond, User: "alice", Client: "claude-code 2.1",
		Outcome: "ok", TraceID: "4bf92f3577b34da6a3ce929d0e0e4736",
		Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d,"path":"/tmp/x","api_key":"sk-planted-%d"}`, i, i)),
		Result:    json.RawMessage(`{"content":[{"type":"text","text":"GITHUB_TOKEN=ghp_plantedplantedplantedplanted0001 ok"}]}`)}
}

// TestTrailRecords: each entry is a line with its fields, its bodies
// redacted as the log's are; a profile's entry names the profile; the
// file is owner-only.
func TestTrailRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tr, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(1)
	tr.Access(e)
	p := entry(2)
	p.Destination, p.Method, p.Tool, p.Outcome, p.Arguments, p.Result = "p/dev", "prompts/get", "review", "-32602", nil, nil
	p.Error = json.RawMessage(`{"code":-32602,"message":"no prompt"}`)
	tr.Access(p)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the trail's file: %v, mode %v; want 0600", err, st.Mode())
	}
	data, _ := os.ReadFile(path)
	for _, leak := range []string{"sk-planted-1", "ghp_planted"} {
		if bytes.Contains(data, []byte(leak)) {
			t.Errorf("the trail holds %q:\n%s", leak, data)
		}
	}
	rs := parse(t, data)
	if len(rs) != 2 {
		t.Fatalf("%d lines; want 2:\n%s", len(rs), data)
	}
	r := rs[0]
	want := record{Time: "2027-01-15T08:00:00.000000001Z", Event: "call", Destination: "files", User: "alice", Client: "claude-code 2.1", Era: "2025",
		Method: "tools/call", Tool: "read", RPCID: "1", Outcome: "ok", Status: 200, DurationMs: 1.5, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	got := r
	got.Arguments, got.Result, got.Principal = nil, nil, ""
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the line:\n got %+v\nwant %+v", got, want)
	}
	if string(r.Arguments) != `{"api_key":"[REDACTED]","n":1,"path":"/tmp/x"}` {
		t.Errorf("arguments %s", r.Arguments)
	}
	if !strings.Contains(string(r.Result), "GITHUB_TOKEN=[REDACTED] ok") {
		t.Errorf("result %s", r.Result)
	}
	if rs[1].Profile != "dev" || rs[1].Destination != "" || rs[1].Prompt != "review" || rs[1].Tool != "" || string(rs[1].Error) != `{"code":-32602,"message":"no prompt"}` {
		t.Errorf("the profile's line: %+v", rs[1])
	}
}

// TestTrailHash: with Hash, the bodies are the SHA-256 of their redacted
// text, and their text is not written.
func TestTrailHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tr, err := Open(Options{Path: path, Hash: true})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(7)
	tr.Access(e)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	rs := lines(t, path, 0)
	sum := func(b []byte) string {
		s := sha256.Sum256([]byte(redact.JSON(b, math.MaxInt)))
		return hex.EncodeToString(s[:])
	}
	if len(rs) != 1 || rs[0].Arguments != nil || rs[0].Result != nil || rs[0].ArgumentsSHA256 != sum(e.Arguments) || rs[0].ResultSHA256 != sum(e.Result) || rs[0].ErrorSHA256 != "" {
		t.Fatalf("hashed line %+v", rs)
	}
	if rs[0].ArgumentsSHA256 == hex.EncodeToString(func() []byte { s := sha256.Sum256(e.Arguments); return s[:] }()) {
		t.Error("the hash is of the arguments as sent, secrets and all")
	}
}

// TestTrailLongBody: a body whose redacted text is longer than MaxBody
// is written as a capped string, and the line stays JSON.
func TestTrailLongBody(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tr, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	e := entry(1)
	e.Result = json.RawMessage(`{"text":"` + strings.Repeat("x", MaxBody) + ` password=hunter2"}`)
	tr.Access(e)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	rs := lines(t, path, 0)
	var s string
	if len(rs) != 1 || json.Unmarshal(rs[0].Result, &s) != nil || len(s) > MaxBody+64 || !strings.Contains(s, "truncated") || strings.Contains(s, "hunter2") {
		t.Fatalf("long result: %d lines, %.200s", len(rs), rs[0].Result)
	}
}

// TestTrailRotates: past MaxSize the file is renamed .1 (the others
// shift up), Keep files are kept, none is larger than MaxSize, and the
// kept lines are the last ones, in order.
func TestTrailRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const maxSize, keep, n = 4096, 3, 200
	tr, err := Open(Options{Path: path, MaxSize: maxSize, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		tr.Access(entry(i))
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(path + "*")
	if len(names) != keep+1 {
		t.Fatalf("files %v; want the trail and %d rotated", names, keep)
	}
	for _, name := range names {
		if st, _ := os.Stat(name); st.Size() > maxSize || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %d bytes, mode %v; want at most %d, 0600", name, st.Size(), st.Mode(), maxSize)
		}
	}
	rs := lines(t, path, keep)
	if len(rs) < 20 || rs[len(rs)-1].RPCID != fmt.Sprint(n-1) {
		t.Fatalf("%d lines kept, the last %+v", len(rs), rs[len(rs)-1])
	}
	first := n - len(rs)
	for i, r := range rs {
		if r.RPCID != fmt.Sprint(first+i) {
			t.Fatalf("line %d of the kept files is call %s; want %d (the kept lines are the last, in order)", i, r.RPCID, first+i)
		}
	}
	if got := testutil.ToFloat64(tr.m.rotations); got < float64(keep) {
		t.Errorf("stelae_audit_rotations_total %v", got)
	}
}

// blockedWriter blocks every Write until open is closed.
type blockedWriter struct {
	open chan struct{}
	buf  bytes.Buffer
	mu   sync.Mutex
}

func (w *blockedWriter) Write(b []byte) (int, error) {
	<-w.open
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}

// TestTrailDropsWhenFull: a writer that cannot write makes Access drop
// entries, never wait: past the queue's entries or bytes the entry is
// counted, and once the writer can write, the trail has a "dropped" line
// for them. Every entry is a line or counted in one.
func TestTrailDropsWhenFull(t *testing.T) {
	for _, bound := range []string{"entries", "bytes"} {
		t.Run(bound, func(t *testing.T) {
			w := &blockedWriter{open: make(chan struct{})}
			tr, err := Open(Options{Path: Stdout, Stdout: w})
			if err != nil {
				t.Fatal(err)
			}
			tr.mu.Lock()
			tr.maxEntries, tr.maxBytes = 50, 1<<30
			if bound == "bytes" {
				tr.maxEntries, tr.maxBytes = 1<<20, 20*(64<<10)
			}
			tr.mu.Unlock()
			const n = 2000
			done := make(chan struct{})
			go func() {
				defer close(done)
				for i := range n {
					e := entry(i)
					e.Result = json.RawMessage(`"` + strings.Repeat("r", 64<<10-2) + `"`)
					tr.Access(e)
				}
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("Access waited for a writer that cannot write")
			}
			if tr.Dropped() == 0 {
				t.Fatal("nothing was dropped")
			}
			close(w.open)
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			calls, dropped := 0, uint64(0)
			for _, r := range parse(t, w.buf.Bytes()) {
				switch r.Event {
				case "call":
					calls++
				case "dropped":
					dropped += r.Dropped
				}
			}
			if calls+int(dropped) != n || dropped != tr.Dropped() || testutil.ToFloat64(tr.m.dropped) != float64(dropped) {
				t.Fatalf("%d call lines + %d dropped (Dropped %d, metric %v); want %d in all", calls, dropped, tr.Dropped(), testutil.ToFloat64(tr.m.dropped), n)
			}
		})
	}
}

// TestTrailConcurrent: entries from many goroutines at once are each
// written once, whole. The queue's two buffers alternate between Access
// and the writer: a buffer the writer recycled while Access still
// appended to it (or the reverse) loses or repeats entries here.
func TestTrailConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tr, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 2000
	tr.mu.Lock()
	tr.maxEntries = workers * each // every entry fits: what is checked is the hand-over
	tr.mu.Unlock()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := entry(w*each + i)
				e.Arguments = json.RawMessage(fmt.Sprintf(`{"n":%d}`, w*each+i))
				tr.Access(e)
			}
		}()
	}
	wg.Wait()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if tr.Dropped() != 0 {
		t.Fatalf("%d dropped", tr.Dropped())
	}
	seen := map[string]int{}
	for _, r := range lines(t, path, 0) {
		if want := fmt.Sprintf(`{"n":%s}`, r.RPCID); string(r.Arguments) != want {
			t.Fatalf("call %s's line has the arguments %s", r.RPCID, r.Arguments)
		}
		seen[r.RPCID]++
	}
	for i := range workers * each {
		if seen[fmt.Sprint(i)] != 1 {
			t.Fatalf("call %d written %d times", i, seen[fmt.Sprint(i)])
		}
	}
}

// TestTrailOpenFails: a file that cannot be opened is an error naming
// the fix, not a trail silently absent.
func TestTrailOpenFails(t *testing.T) {
	_, err := Open(Options{Path: filepath.Join(t.TempDir(), "no", "such", "dir", "audit.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "-audit-log") {
		t.Fatalf("Open: %v", err)
	}
}

// TestTrailSyncs: written lines are fsynced within SyncEvery, without
// Close (the file is read while the trail is open, after the writer
// has flushed; the count of fsyncs is what is checked).
func TestTrailSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	tr, err := Open(Options{Path: path, SyncEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.Access(entry(1))
	deadline := time.Now().Add(20 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		if len(parse(t, data)) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the line was not written without Close")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkTrailLine is the writer's cost per line: redaction of a
// call's arguments and result, and the JSON line.
func BenchmarkTrailLine(b *testing.B) {
	plain := entry(1)
	plain.Arguments, plain.Result = json.RawMessage(`{"message":"hello there"}`), json.RawMessage(`{"content":[{"type":"text","text":"hello there"}]}`)
	for _, c := range []struct {
		name string
		e    session.AccessEntry
	}{{"plain", plain}, {"secrets", entry(1)}} {
		b.Run(c.name, func(b *testing.B) {
			enc := encoder{}
			b.ReportAllocs()
			for b.Loop() {
				_ = enc.entry(&c.e)
			}
		})
	}
}
