package session

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// TestAccessLogIsHclogsLine: the fast access log writes the bytes hclog
// writes for the same fields (the timestamp aside, which is checked for
// hclog's format), and declines what hclog would escape.
func TestAccessLogIsHclogsLine(t *testing.T) {
	var viaHclog, direct bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "stelae-bridge", Level: hclog.Info, Output: &viaHclog}).Named("http").With("destination", "echo")
	a := newAccessLog(log, &direct, false)
	if a == nil {
		t.Fatal("no fast access log for a text logger")
	}
	for _, tc := range []struct {
		method, id string
		status     int
		latency    float64
		session    string
	}{
		{"tools/call", "12", 200, 0.844, "0e6c1a5e-6a3f-4a57-9a63-6b1f1f0b3c11"},
		{"tools/list", `"abc"`, 200, 12, ""},
		{"", "", 400, 0.001, ""},
		{"initialize", `"a b=c"`, 503, 1234.5, "s"},
		{"notifications/initialized", "", 202, 1e-05, "x"},
		{"x", "1", 200, 2.5e+06, ""},
	} {
		viaHclog.Reset()
		direct.Reset()
		args := []any{"mcp_method", tc.method, "rpc_id", tc.id, "status_code", tc.status, "latency_ms", tc.latency}
		if tc.session != "" {
			args = append(args, "session", tc.session)
		}
		log.Info("POST", args...)
		if !a.write(time.Now(), tc.method, tc.id, tc.status, tc.latency, tc.session) {
			t.Fatalf("%+v: declined", tc)
		}
		want, got := viaHclog.String(), direct.String()
		ws, wrest, _ := strings.Cut(want, " ")
		gs, grest, _ := strings.Cut(got, " ")
		if grest != wrest {
			t.Errorf("%+v:\nhclog:  %q\ndirect: %q", tc, want, got)
		}
		if _, err := time.Parse(hclog.TimeFormat, gs); err != nil || len(gs) != len(ws) {
			t.Errorf("timestamp %q (hclog's %q): %v", gs, ws, err)
		}
	}
	for _, v := range []string{"é", "a\nb", "tab\there"} {
		if a.write(time.Now(), v, "1", 200, 1, "") || a.write(time.Now(), "m", v, 200, 1, "") {
			t.Errorf("%q written; want it left to hclog", v)
		}
	}
	if newAccessLog(log, &direct, true) != nil {
		t.Error("a fast access log for JSON output")
	}
}

// TestAccessLogStamp: the timestamp, formatted once per second with its
// milliseconds written in place, is hclog's for every millisecond of a
// second, across seconds, and in a zone east or west of UTC.
func TestAccessLogStamp(t *testing.T) {
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -8*3600)} {
		a := &accessLog{}
		base := time.Date(2026, 11, 25, 23, 59, 58, 0, loc)
		for _, d := range []time.Duration{0, 1 * time.Millisecond, 9*time.Millisecond + 999, 10 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond, 999*time.Millisecond + 999999, time.Second + 7*time.Millisecond, 2*time.Second + 450*time.Millisecond, 500 * time.Millisecond} {
			now := base.Add(d)
			got := string(a.appendStamp([]byte("x"), now))
			if want := "x" + now.Format(hclog.TimeFormat); got != want {
				t.Errorf("%v: %q, want %q", now, got, want)
			}
		}
	}
}

func BenchmarkAccessLog(b *testing.B) {
	log := hclog.New(&hclog.LoggerOptions{Name: "stelae-bridge", Level: hclog.Info, Output: io.Discard}).Named("http").With("destination", "echo")
	b.Run("hclog", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			log.Info("POST", "mcp_method", "tools/call", "rpc_id", "12345", "status_code", 200, "latency_ms", 0.531, "session", "0e6c1a5e-6a3f-4a57-9a63-6b1f1f0b3c11")
		}
	})
	b.Run("direct", func(b *testing.B) {
		a := newAccessLog(log, io.Discard, false)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			a.write(time.Now(), "tools/call", "12345", 200, 0.531, "0e6c1a5e-6a3f-4a57-9a63-6b1f1f0b3c11")
		}
	})
}
