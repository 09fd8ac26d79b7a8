package console

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/stelae-bridge/stelae-bridge/doctor"
)

// doctorTimeout bounds one run of the doctor from the page.
const doctorTimeout = 2 * time.Minute

// serveDoctor runs 'stelae-bridge doctor”s checks (package doctor) from
// the console: POST /console/api/doctor {url, token, fetch} answers the
// report. Like an action it needs an admitted viewer, a same-origin
// request and the page's CSRF token; one run at a time (a second gets
// 409), bounded by doctorTimeout. The checks go out to the URL given,
// as a client would: the bridge dials it. "fetch" lets the run have the
// authorization server fetch claude.ai's client document (the internet);
// without it that check says it was not run.
func (c *Console) serveDoctor(w http.ResponseWriter, r *http.Request) {
	if !c.admitPost(w, r) {
		return
	}
	var in struct {
		URL   string `json:"url"`
		Token string `json:"token"`
		Fetch bool   `json:"fetch"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10)).Decode(&in); err != nil || in.URL == "" {
		writeError(w, http.StatusBadRequest, "give the endpoint's URL to check, as a small JSON object {\"url\": …}")
		return
	}
	if !c.doctor.TryLock() {
		writeError(w, http.StatusConflict, "a check is running already; wait for its report")
		return
	}
	defer c.doctor.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), doctorTimeout)
	defer cancel()
	c.log.Info("the doctor runs from the console", "url", in.URL)
	writeJSON(w, http.StatusOK, doctor.Run(ctx, doctor.Options{URL: in.URL, Token: in.Token, Offline: !in.Fetch}))
}
