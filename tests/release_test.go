//go:build linux

package tests

// The release (issue 41): deploy/release/release.sh --snapshot (the pinned GoReleaser) runs on a
// copy of this working tree tagged v1.2.3, and the test checks what it made as a user and a
// packager would: each archive's binary is stamped (version, commit, date) for its platform;
// checksums.txt verifies; each SBOM lists its binary's module graph; the Homebrew cask and the Scoop
// and winget manifests name the archives by their checksums; the .rpm holds the files the .deb
// holds, with the same modes and owners; and, as root, the .deb is installed with dpkg, its files,
// user and permissions checked, its binary serving the default destinations file as the package's
// user, then removed (dpkg -r) and purged (dpkg --purge) with nothing left behind.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

const (
	releaseTag     = "v1.2.3"
	releaseVersion = "1.2.4-snapshot" // goreleaser.yaml: the next patch, "-snapshot"
	releaseModule  = "github.com/stelae-bridge/stelae-bridge"
)

// releaseTargets are the platforms goreleaser.yaml builds.
var releaseTargets = []struct{ goos, goarch string }{
	{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}, {"windows", "arm64"},
}

// packagedFile is one path the .deb and the .rpm install, with its mode
// and owners.
type packagedFile struct {
	path, mode, owner, group string
}

var packagedFiles = []packagedFile{
	{"/usr/bin/stelae-bridge", "-rwxr-xr-x", "root", "root"},
	{"/usr/lib/systemd/system/stelae-bridge.service", "-rw-r--r--", "root", "root"},
	{"/usr/lib/systemd/system/stelae-bridge.socket", "-rw-r--r--", "root", "root"},
	{"/usr/lib/systemd/system/stelae-bridge.service.d/package.conf", "-rw-r--r--", "root", "root"},
	{"/etc/stelae-bridge", "drwxr-xr-x", "root", "root"},
	{"/etc/stelae-bridge/destinations.yaml", "-rw-r-----", "root", "stelae-bridge"},
	{"/etc/stelae-bridge/env", "-rw-------", "root", "root"},
	{"/var/lib/stelae-bridge", "drwx------", "stelae-bridge", "stelae-bridge"},
}

func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("-short skips the release build (GoReleaser, six builds and ten SBOMs: minutes)")
	}
	for _, p := range []string{"git", "go"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is needed to make a release: %v", p, err)
		}
	}
	repo, head := releaseCopy(t)
	dist := buildRelease(t, repo)
	sums := checkChecksums(t, dist)

	deps := map[string][]debugModule{}
	t.Run("archives", func(t *testing.T) {
		for _, tg := range releaseTargets {
			deps[tg.goos+"/"+tg.goarch] = checkArchive(t, dist, tg.goos, tg.goarch, head)
		}
	})
	t.Run("sboms", func(t *testing.T) {
		for _, tg := range releaseTargets {
			checkSBOM(t, filepath.Join(dist, archiveName(tg.goos, tg.goarch)+".cdx.json"), tg.goos, tg.goarch, deps[tg.goos+"/"+tg.goarch])
		}
		for _, arch := range []string{"amd64", "arm64"} {
			checkSBOM(t, filepath.Join(dist, debName(arch)+".cdx.json"), "linux", arch, deps["linux/"+arch])
			checkSBOM(t, filepath.Join(dist, rpmName(arch)+".cdx.json"), "linux", arch, deps["linux/"+arch])
		}
	})
	t.Run("manifests", func(t *testing.T) { checkManifests(t, dist, sums) })
	t.Run("rpm", func(t *testing.T) { checkRPM(t, dist) })
	t.Run("deb", func(t *testing.T) { checkDeb(t, repo, dist, head) })
}

// debugModule is a module the binary was linked with: its path and
// version (a replacement's, where one is).
type debugModule struct{ path, version string }

func archiveName(goos, goarch string) string {
	ext := ".tar.gz"
	if goos == "windows" {
		ext = ".zip"
	}
	return fmt.Sprintf("stelae-bridge_%s_%s_%s%s", releaseVersion, goos, goarch, ext)
}

func debName(arch string) string {
	return fmt.Sprintf("stelae-bridge_%s_%s.deb", strings.Replace(releaseVersion, "-", "~", 1), arch)
}

func rpmName(arch string) string {
	rpmArch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]
	return fmt.Sprintf("stelae-bridge-%s-1.%s.rpm", strings.Replace(releaseVersion, "-", "~", 1), rpmArch)
}

// releaseCopy copies this working tree (what git tracks, changed or not,
// and new files it does not ignore) into a new repository, commits it and
// tags it releaseTag, so the release is of exactly what is checked out. It
// returns the copy and its commit.
func releaseCopy(t *testing.T) (string, string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	repo := filepath.Join(t.TempDir(), "stelae-bridge")
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, name)
		st, err := os.Lstat(src)
		if err != nil {
			continue // deleted in the working tree
		}
		if err := copyEntry(src, filepath.Join(repo, name), st.Mode()); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=release test", "-c", "user.email=release@test.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "the working tree, released by TestRelease")
	git("tag", releaseTag)
	// The URL GoReleaser reads (never fetched: a snapshot publishes nothing).
	git("remote", "add", "origin", "https://github.com/stelae-bridge/stelae-bridge.git")
	return repo, git("rev-parse", "HEAD")
}

// buildRelease runs the release command (deploy/release/README.md), a
// snapshot, in repo, offline, and returns its dist directory.
func buildRelease(t *testing.T, repo string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	// The modules the release builds from, fetched first through the Go
	// module proxy (the bridge's, then the release tools'), so that the
	// release itself runs with every proxy variable pointing at a closed
	// loopback port: a snapshot that tried to reach GitHub, or anything
	// else, fails here.
	for _, dir := range []string{repo, filepath.Join(repo, "deploy/release")} {
		get := exec.CommandContext(ctx, "go", "mod", "download")
		get.Dir = dir
		if out, err := get.CombinedOutput(); err != nil {
			t.Fatalf("go mod download in %s: %v\n%s", dir, err, out)
		}
	}
	cmd := exec.CommandContext(ctx, filepath.Join(repo, "deploy/release/release.sh"), "--snapshot")
	cmd.Dir = repo
	closed := "http://" + freeAddr(t)
	cmd.Env = append(os.Environ(), "HTTPS_PROXY="+closed, "HTTP_PROXY="+closed, "https_proxy="+closed, "http_proxy="+closed, "ALL_PROXY="+closed, "NO_PROXY=", "no_proxy=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		tail := out.Bytes()
		if len(tail) > 8<<10 {
			tail = tail[len(tail)-8<<10:]
		}
		t.Fatalf("deploy/release/release.sh --snapshot: %v\n%s", err, tail)
	}
	t.Logf("the snapshot release took %s", time.Since(start).Round(time.Second))
	return filepath.Join(repo, "dist")
}

// checkChecksums verifies every line of checksums.txt and that every
// archive, package and SBOM is listed; it returns the sums by file name.
func checkChecksums(t *testing.T, dist string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dist, "checksums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("checksums.txt: a line that is not 'SHA256  NAME': %q", line)
		}
		f, err := os.ReadFile(filepath.Join(dist, name))
		if err != nil {
			t.Fatalf("checksums.txt names %s: %v", name, err)
		}
		got := sha256.Sum256(f)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("checksums.txt: %s does not verify", name)
		}
		sums[name] = sum
	}
	var want []string
	for _, tg := range releaseTargets {
		want = append(want, archiveName(tg.goos, tg.goarch))
	}
	for _, arch := range []string{"amd64", "arm64"} {
		want = append(want, debName(arch), rpmName(arch))
	}
	for _, name := range want {
		for _, n := range []string{name, name + ".cdx.json"} {
			if _, ok := sums[n]; !ok {
				t.Errorf("checksums.txt does not list %s (it lists %d files)", n, len(sums))
			}
		}
	}
	return sums
}

// checkArchive opens one archive, checks what it holds and its binary's
// stamps, runs the binary when it is this machine's, and returns the
// modules it was linked with.
func checkArchive(t *testing.T, dist, goos, goarch, head string) []debugModule {
	t.Helper()
	name := archiveName(goos, goarch)
	files := map[string][]byte{}
	if goos == "windows" {
		z, err := zip.OpenReader(filepath.Join(dist, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer z.Close()
		for _, f := range z.File {
			r, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			files[f.Name], err = io.ReadAll(r)
			r.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	} else {
		f, err := os.Open(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		gz, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		tr := tar.NewReader(gz)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
			if h.Name == "stelae-bridge" && h.FileInfo().Mode().Perm() != 0o755 {
				t.Errorf("%s: the binary's mode is %v", name, h.FileInfo().Mode())
			}
		}
	}
	bin := "stelae-bridge"
	if goos == "windows" {
		bin += ".exe"
	}
	for _, want := range []string{bin, "README.md", "destinations.yaml", "deploy/stelae-bridge.service", "deploy/stelae-bridge.socket"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s has no %s", name, want)
		}
	}
	if len(files) != 5 {
		t.Errorf("%s holds %d files, want the 5 goreleaser.yaml names", name, len(files))
	}
	exe := files[bin]
	info, err := buildinfo.Read(bytes.NewReader(exe))
	if err != nil {
		t.Fatalf("%s: its binary's build info: %v", name, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for key, want := range map[string]string{"GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0", "-trimpath": "true", "vcs.revision": head, "vcs.modified": "false"} {
		if settings[key] != want {
			t.Errorf("%s: the binary's %s is %q, want %q", name, key, settings[key], want)
		}
	}
	// -trimpath keeps -ldflags out of the build info: the version is looked
	// for in the binary (and read from -version below where it runs).
	if !bytes.Contains(exe, []byte(releaseVersion)) {
		t.Errorf("%s: the binary is not stamped with version %s", name, releaseVersion)
	}
	if settings["vcs.time"] == "" {
		t.Errorf("%s: the binary carries no commit date (vcs.time)", name)
	}
	if info.Path != releaseModule+"/cmd/stelae-bridge" {
		t.Errorf("%s: the binary is %s", name, info.Path)
	}
	if goos == runtime.GOOS && goarch == runtime.GOARCH {
		path := filepath.Join(t.TempDir(), bin)
		if err := os.WriteFile(path, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(path, "-version").Output()
		want := fmt.Sprintf("stelae-bridge %s (module %s, commit %s %s, ", releaseVersion, releaseTag, head[:12], settings["vcs.time"])
		if err != nil || !strings.HasPrefix(string(out), want) {
			t.Errorf("%s: -version says %q (%v); want it to start %q", name, out, err, want)
		}
	}
	var mods []debugModule
	for _, m := range info.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		mods = append(mods, debugModule{m.Path, m.Version})
	}
	if len(mods) < 10 {
		t.Errorf("%s: the binary lists %d modules", name, len(mods))
	}
	return mods
}

// checkSBOM reads one CycloneDX SBOM and checks it describes the bridge for
// goos/goarch, lists every module the binary was linked with, and that its
// dependency graph starts at the bridge and names only listed modules.
func checkSBOM(t *testing.T, path, goos, goarch string, mods []debugModule) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("an SBOM: %v", err)
		return
	}
	type component struct {
		Name, Version, Purl string
		Properties          []struct{ Name, Value string }
	}
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component struct {
				component
				BOMRef string `json:"bom-ref"`
			}
		}
		Components []struct {
			component
			BOMRef string `json:"bom-ref"`
		}
		Dependencies []struct {
			Ref       string   `json:"ref"`
			DependsOn []string `json:"dependsOn"`
		}
	}
	name := filepath.Base(path)
	if err := json.Unmarshal(b, &bom); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		t.Errorf("%s: bomFormat %q, specVersion %q", name, bom.BOMFormat, bom.SpecVersion)
	}
	main := bom.Metadata.Component
	if main.Name != releaseModule {
		t.Errorf("%s describes %q", name, main.Name)
	}
	env := map[string]string{}
	for _, p := range main.Properties {
		env[strings.TrimPrefix(p.Name, "cdx:gomod:build:env:")] = p.Value
	}
	if env["GOOS"] != goos || env["GOARCH"] != goarch {
		t.Errorf("%s is for %s/%s, want %s/%s", name, env["GOOS"], env["GOARCH"], goos, goarch)
	}
	listed := map[string]bool{main.BOMRef: true}
	purls := map[string]bool{}
	for _, c := range bom.Components {
		listed[c.BOMRef] = true
		purl, _, _ := strings.Cut(c.Purl, "?")
		purls[strings.ToLower(purl)] = true
	}
	if len(mods) == 0 {
		t.Errorf("%s: no module list to compare it with (its archive's check failed)", name)
	}
	for _, m := range mods {
		if !purls[strings.ToLower("pkg:golang/"+m.path+"@"+m.version)] {
			t.Errorf("%s does not list %s@%s, which the binary is linked with", name, m.path, m.version)
		}
	}
	graph := map[string][]string{}
	for _, d := range bom.Dependencies {
		graph[d.Ref] = d.DependsOn
		for _, on := range d.DependsOn {
			if !listed[on] {
				t.Errorf("%s: %s depends on %s, which it does not list", name, d.Ref, on)
			}
		}
	}
	// Every module is reached from the bridge through the graph.
	reached := map[string]bool{}
	var walk func(string)
	walk = func(ref string) {
		if reached[ref] {
			return
		}
		reached[ref] = true
		for _, on := range graph[ref] {
			walk(on)
		}
	}
	walk(main.BOMRef)
	if len(graph[main.BOMRef]) == 0 {
		t.Errorf("%s: the bridge (%s) depends on nothing in its graph", name, main.BOMRef)
	}
	for _, c := range bom.Components {
		if !reached[c.BOMRef] {
			t.Errorf("%s lists %s, which the graph does not reach from the bridge", name, c.BOMRef)
		}
	}
}

// checkManifests checks the Homebrew cask and the Scoop and winget
// manifests name each archive they install by its checksum.
func checkManifests(t *testing.T, dist string, sums map[string]string) {
	t.Helper()
	cask, err := os.ReadFile(filepath.Join(dist, "homebrew/Casks/stelae-bridge.rb"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cask), fmt.Sprintf("version %q", releaseVersion)) || !strings.Contains(string(cask), `binary "stelae-bridge"`) {
		t.Errorf("the cask does not install version %s's binary:\n%s", releaseVersion, cask)
	}
	for _, tg := range releaseTargets[:4] { // linux and darwin
		url := fmt.Sprintf("https://github.com/stelae-bridge/stelae-bridge/releases/download/%s/stelae-bridge_#{version}_%s_%s.tar.gz", releaseTag, tg.goos, tg.goarch)
		re := regexp.MustCompile(regexp.QuoteMeta(fmt.Sprintf("url %q", url)) + `\s+sha256 "([0-9a-f]{64})"`)
		m := re.FindStringSubmatch(string(cask))
		if m == nil || m[1] != sums[archiveName(tg.goos, tg.goarch)] {
			t.Errorf("the cask does not name %s with its checksum:\n%s", archiveName(tg.goos, tg.goarch), cask)
		}
	}

	var scoop struct {
		Version      string
		Architecture map[string]struct {
			URL  string
			Bin  []string
			Hash string
		}
	}
	b, err := os.ReadFile(filepath.Join(dist, "scoop/stelae-bridge.json"))
	if err == nil {
		err = json.Unmarshal(b, &scoop)
	}
	if err != nil {
		t.Fatalf("the Scoop manifest: %v", err)
	}
	winArch := map[string]string{"amd64": "64bit", "arm64": "arm64"}
	for _, arch := range []string{"amd64", "arm64"} {
		a := scoop.Architecture[winArch[arch]]
		name := archiveName("windows", arch)
		if scoop.Version != releaseVersion || !strings.HasSuffix(a.URL, "/"+releaseTag+"/"+name) || a.Hash != sums[name] || len(a.Bin) != 1 || a.Bin[0] != "stelae-bridge.exe" {
			t.Errorf("the Scoop manifest's %s: %+v (version %s)", winArch[arch], a, scoop.Version)
		}
	}

	var installer struct {
		PackageIdentifier string `yaml:"PackageIdentifier"`
		PackageVersion    string `yaml:"PackageVersion"`
		Installers        []struct {
			Architecture         string `yaml:"Architecture"`
			InstallerURL         string `yaml:"InstallerUrl"`
			InstallerSha256      string `yaml:"InstallerSha256"`
			NestedInstallerFiles []struct {
				RelativeFilePath     string `yaml:"RelativeFilePath"`
				PortableCommandAlias string `yaml:"PortableCommandAlias"`
			} `yaml:"NestedInstallerFiles"`
		} `yaml:"Installers"`
	}
	dir := filepath.Join(dist, "winget/manifests/s/StelaeBridge/StelaeBridge", releaseVersion)
	b, err = os.ReadFile(filepath.Join(dir, "StelaeBridge.StelaeBridge.installer.yaml"))
	if err == nil {
		err = yaml.Unmarshal(b, &installer)
	}
	if err != nil {
		t.Fatalf("the winget installer manifest: %v", err)
	}
	for _, f := range []string{"StelaeBridge.StelaeBridge.yaml", "StelaeBridge.StelaeBridge.locale.en-US.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the winget manifests: %v", err)
		}
	}
	wingetArch := map[string]string{"x64": "amd64", "arm64": "arm64"}
	seen := 0
	for _, in := range installer.Installers {
		name := archiveName("windows", wingetArch[in.Architecture])
		if !strings.HasSuffix(in.InstallerURL, "/"+releaseTag+"/"+name) || !strings.EqualFold(in.InstallerSha256, sums[name]) ||
			len(in.NestedInstallerFiles) != 1 || in.NestedInstallerFiles[0].RelativeFilePath != "stelae-bridge.exe" || in.NestedInstallerFiles[0].PortableCommandAlias != "stelae-bridge" {
			t.Errorf("the winget installer for %s: %+v", in.Architecture, in)
		}
		seen++
	}
	if installer.PackageIdentifier != "StelaeBridge.StelaeBridge" || installer.PackageVersion != releaseVersion || seen != 2 {
		t.Errorf("the winget installer manifest: %s", b)
	}
}

// checkRPM checks the .rpm for this machine's architecture holds the
// packaged files with their modes and owners, the two configuration files
// and the scripts that make the user.
func checkRPM(t *testing.T, dist string) {
	rpm := debianProgram(t, "rpm", "the .rpm's checks", "rpm")
	pkg := filepath.Join(dist, rpmName(runtime.GOARCH))
	query := func(args ...string) string {
		out, err := exec.Command(rpm, append([]string{"-qp", "--nosignature"}, append(args, pkg)...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("rpm -qp %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if got := strings.TrimSpace(query("--qf", "%{NAME} %{VERSION}")); got != "stelae-bridge "+strings.Replace(releaseVersion, "-", "~", 1) {
		t.Errorf("the .rpm is %q", got)
	}
	listed := map[string][3]string{}
	for _, line := range strings.Split(strings.TrimSpace(query("--qf", "[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILENAMES}\n]")), "\n") {
		if f := strings.Fields(line); len(f) == 4 {
			listed[f[3]] = [3]string{f[0], f[1], f[2]}
		}
	}
	for _, want := range packagedFiles {
		if got := listed[want.path]; got != [3]string{want.mode, want.owner, want.group} {
			t.Errorf("the .rpm's %s: %v, want %s %s %s", want.path, got, want.mode, want.owner, want.group)
		}
	}
	config := query("--configfiles")
	for _, f := range []string{"/etc/stelae-bridge/destinations.yaml", "/etc/stelae-bridge/env"} {
		if !strings.Contains(config, f) {
			t.Errorf("the .rpm does not mark %s a configuration file:\n%s", f, config)
		}
	}
	if scripts := query("--scripts"); !strings.Contains(scripts, "useradd --system") || !strings.Contains(scripts, "systemctl disable") {
		t.Errorf("the .rpm's scripts do not make the user or disable the units:\n%s", scripts)
	}
}

// checkDeb installs the .deb for this machine (as root), checks what it
// installed, runs its binary on the default destinations file as the
// package's user, reinstalls it (the upgrade path), removes it and purges
// it.
func checkDeb(t *testing.T, repo, dist, head string) {
	dpkg := debianProgram(t, "dpkg", "the .deb's installation", "dpkg")
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("installing the .deb needs root, and CI runs as root: run the suite as root")
		}
		t.Skip("installing the .deb needs root (dpkg -i)")
	}
	// Never over an installation or a user of this machine's own.
	if out, err := exec.Command("dpkg-query", "-W", "-f", "${Status}", "stelae-bridge").Output(); err == nil && strings.Contains(string(out), "installed") {
		t.Fatalf("stelae-bridge is installed on this machine (%s): the test installs its own; remove it first (dpkg --purge stelae-bridge)", out)
	}
	for _, p := range []string{"/etc/stelae-bridge", "/var/lib/stelae-bridge", "/usr/bin/stelae-bridge"} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists on this machine: the test would install over it; move it away first", p)
		}
	}
	if _, err := user.Lookup("stelae-bridge"); err == nil {
		t.Fatal("the user stelae-bridge exists on this machine: the test's package would take it over; remove it first")
	}
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	pkg := filepath.Join(dist, debName(runtime.GOARCH))
	run(dpkg, "-i", pkg)
	t.Cleanup(func() {
		if out, err := exec.Command(dpkg, "--purge", "stelae-bridge").CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge stelae-bridge: %v\n%s", err, out)
		}
	})

	// Its files, modes and owners; its configuration files; its user.
	for _, want := range packagedFiles {
		st, err := os.Lstat(want.path)
		if err != nil {
			t.Errorf("the .deb did not install %s: %v", want.path, err)
			continue
		}
		sys := st.Sys().(*syscall.Stat_t)
		owner, _ := user.LookupId(strconv.Itoa(int(sys.Uid)))
		group, _ := user.LookupGroupId(strconv.Itoa(int(sys.Gid)))
		if st.Mode().String() != want.mode || owner == nil || owner.Username != want.owner || group == nil || group.Name != want.group {
			t.Errorf("%s: %s %v %v, want %s %s %s", want.path, st.Mode(), owner, group, want.mode, want.owner, want.group)
		}
	}
	for installed, src := range map[string]string{
		"/etc/stelae-bridge/destinations.yaml":                         "destinations.yaml",
		"/usr/lib/systemd/system/stelae-bridge.service":                "deploy/stelae-bridge.service",
		"/usr/lib/systemd/system/stelae-bridge.socket":                 "deploy/stelae-bridge.socket",
		"/usr/lib/systemd/system/stelae-bridge.service.d/package.conf": "deploy/release/package.conf",
		"/etc/stelae-bridge/env":                                       "deploy/release/env",
	} {
		a, err1 := os.ReadFile(installed)
		b, err2 := os.ReadFile(filepath.Join(repo, src))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is not %s (%v %v)", installed, src, err1, err2)
		}
	}
	if conffiles := run("dpkg-query", "-W", "-f", "${Conffiles}", "stelae-bridge"); !strings.Contains(conffiles, "/etc/stelae-bridge/destinations.yaml") || !strings.Contains(conffiles, "/etc/stelae-bridge/env") {
		t.Errorf("the .deb's configuration files: %q", conffiles)
	}
	u, err := user.Lookup("stelae-bridge")
	if err != nil {
		t.Fatalf("the .deb made no user: %v", err)
	}
	passwd := run("getent", "passwd", "stelae-bridge")
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if f := strings.Split(strings.TrimSpace(passwd), ":"); len(f) != 7 || uid == 0 || uid >= 1000 || f[5] != "/var/lib/stelae-bridge" || f[6] != "/usr/sbin/nologin" {
		t.Errorf("the user: %q, want a system user (uid < 1000) at home in /var/lib/stelae-bridge with no shell", passwd)
	}
	if g, err := user.LookupGroupId(u.Gid); err != nil || g.Name != "stelae-bridge" {
		t.Errorf("the user's group: %v %v", g, err)
	}
	if out, err := exec.Command("/usr/bin/stelae-bridge", "-version").Output(); err != nil || !strings.HasPrefix(string(out), "stelae-bridge "+releaseVersion+" ") || !strings.Contains(string(out), head[:12]) {
		t.Errorf("the installed binary's -version: %q %v", out, err)
	}
	// systemd reads the installed unit with the package's drop-in.
	if analyze, err := exec.LookPath("systemd-analyze"); err == nil {
		if out, err := exec.Command(analyze, "verify", "/usr/lib/systemd/system/stelae-bridge.service").CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify the installed unit: %v\n%s", err, out)
		}
	} else if os.Getenv("CI") != "" {
		t.Error("systemd-analyze is missing (.ci/run installs Debian's systemd)")
	}

	// The installed binary serves the default file as the package's user,
	// with the drop-in's flags (the address aside).
	serveDefault(t, uid, gid)

	// A reinstall takes the upgrade path of the scripts and keeps the state.
	run(dpkg, "-i", pkg)
	if _, err := os.Stat("/var/lib/stelae-bridge/.npm"); err != nil {
		t.Errorf("a reinstall lost the state directory's contents: %v", err)
	}

	// dpkg -r: the program and the units go; the configuration, the user
	// and the state stay.
	run(dpkg, "-r", "stelae-bridge")
	for _, gone := range []string{"/usr/bin/stelae-bridge", "/usr/lib/systemd/system/stelae-bridge.service", "/usr/lib/systemd/system/stelae-bridge.socket", "/usr/lib/systemd/system/stelae-bridge.service.d"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("dpkg -r left %s", gone)
		}
	}
	for _, kept := range []string{"/etc/stelae-bridge/destinations.yaml", "/etc/stelae-bridge/env", "/var/lib/stelae-bridge/.npm"} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("dpkg -r removed %s: %v", kept, err)
		}
	}
	if _, err := user.Lookup("stelae-bridge"); err != nil {
		t.Errorf("dpkg -r removed the user: %v", err)
	}

	// dpkg --purge: nothing is left.
	run(dpkg, "--purge", "stelae-bridge")
	for _, gone := range []string{"/etc/stelae-bridge", "/var/lib/stelae-bridge", "/var/cache/stelae-bridge"} {
		if _, err := os.Lstat(gone); err == nil {
			t.Errorf("dpkg --purge left %s", gone)
		}
	}
	if _, err := user.Lookup("stelae-bridge"); err == nil {
		t.Error("dpkg --purge left the user stelae-bridge")
	}
	if _, err := user.LookupGroup("stelae-bridge"); err == nil {
		t.Error("dpkg --purge left the group stelae-bridge")
	}
	if out, _ := exec.Command("dpkg-query", "-W", "-f", "${Status}", "stelae-bridge").CombinedOutput(); strings.Contains(string(out), " installed") || strings.Contains(string(out), "config-files") {
		t.Errorf("after the purge dpkg says %q", out)
	}
}

// serveDefault runs /usr/bin/stelae-bridge as the package's user (uid,
// gid) with the installed drop-in's flags, on the installed default
// destinations file, unchanged, and makes an MCP call of its server. The
// file starts it with 'npx -y @modelcontextprotocol/server-everything'; so
// that nothing is fetched from the registry, the npx the bridge finds is a
// script that checks it is given exactly that and runs the suite's pinned
// copy of the package, placed in the user's ~/.npm (which the file's
// sandbox preset lets the server read).
func serveDefault(t *testing.T, uid, gid int) {
	t.Helper()
	conf, err := os.ReadFile("/usr/lib/systemd/system/stelae-bridge.service.d/package.conf")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(conf), "\n") {
		if rest, ok := strings.CutPrefix(line, "ExecStart="); ok && rest != "" {
			args = strings.Fields(strings.ReplaceAll(rest, "%S", "/var/lib"))
		}
	}
	if len(args) < 2 || args[0] != "/usr/bin/stelae-bridge" {
		t.Fatalf("the drop-in's ExecStart: %q", args)
	}
	addr := freeAddr(t)
	for i := range args {
		if args[i] == "-listen" && i+1 < len(args) {
			args[i+1] = addr
		}
	}

	home := "/var/lib/stelae-bridge"
	pinned := filepath.Join(home, ".npm", "stelae-test")
	everythingBin(t) // tests/node_modules
	copyNodePackage(t, "@modelcontextprotocol/server-everything", filepath.Join(pinned, "node_modules"))
	shim := filepath.Join(pinned, "bin", "npx")
	script := "#!/bin/sh\n# TestRelease's npx: the pinned server-everything, never the registry.\n" +
		"[ \"$*\" = \"-y @modelcontextprotocol/server-everything\" ] || { echo \"npx shim: unexpected arguments: $*\" >&2; exit 2; }\n" +
		"exec node \"$(dirname \"$0\")/../node_modules/@modelcontextprotocol/server-everything/dist/index.js\"\n"
	if err := os.MkdirAll(filepath.Dir(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(shim, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := filepath.Walk(filepath.Join(home, ".npm"), func(p string, _ fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = "/"
	cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Dir(shim) + ":/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	p := runBinary(t, cmd)
	defer stopBinary(t, p)
	c := newClient(t, p.base+"/everything/mcp")
	c.initialize()
	r := c.callTool("1", "echo", map[string]string{"message": "from the package"})
	if got := textOf(resultOK(t, "the installed bridge's echo", r)); !strings.Contains(got, "from the package") {
		t.Errorf("the installed bridge's echo: %q\n%s", got, p.logs.String())
	}
	// The default destination is also served at /mcp.
	d := newClient(t, p.base+"/mcp")
	d.initialize()
	if got := textOf(resultOK(t, "echo at /mcp", d.callTool("1", "echo", map[string]string{"message": "at /mcp"}))); !strings.Contains(got, "at /mcp") {
		t.Errorf("echo at /mcp: %q", got)
	}
	// It wrote its state as the user.
	entries, err := os.ReadDir(home)
	if err != nil {
		t.Fatal(err)
	}
	wrote := false
	for _, e := range entries {
		st, err := os.Lstat(filepath.Join(home, e.Name()))
		if err == nil && e.Name() != ".npm" && st.Sys().(*syscall.Stat_t).Uid == uint32(uid) {
			wrote = true
		}
	}
	if !wrote {
		t.Errorf("the bridge wrote nothing of its own in its state directory %s (%d entries)", home, len(entries))
	}
	r2, err := request(http.MethodGet, p.base+"/healthz", "", "")
	if err != nil || r2.status != http.StatusOK {
		t.Errorf("/healthz: %v %v", r2.status, err)
	}
}

// copyNodePackage copies the package name from tests/node_modules, with
// every package it depends on (as npm laid them out), into dst, a
// node_modules directory, keeping their paths.
func copyNodePackage(t *testing.T, name, dst string) {
	t.Helper()
	src, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	copied := map[string]bool{}
	var add func(name, from string, optional bool)
	add = func(name, from string, optional bool) {
		// Node's resolution: from's own node_modules, then each parent's,
		// up to the suite's (src).
		dir := ""
		for d := from; ; d = filepath.Dir(d) {
			if filepath.Base(d) != "node_modules" {
				cand := filepath.Join(d, "node_modules", name)
				if _, err := os.Stat(filepath.Join(cand, "package.json")); err == nil {
					dir = cand
					break
				}
			}
			if d == filepath.Dir(src) || !strings.HasPrefix(d, filepath.Dir(src)) {
				break
			}
		}
		if dir == "" && optional {
			return // an optional dependency npm did not install here
		}
		if dir == "" {
			t.Fatalf("the pinned %s: %s, which it needs, is not in %s", from, name, src)
		}
		if copied[dir] {
			return
		}
		copied[dir] = true
		var pj struct {
			Dependencies         map[string]string
			OptionalDependencies map[string]string
		}
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err == nil {
			err = json.Unmarshal(b, &pj)
		}
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		for dep := range pj.Dependencies {
			add(dep, dir, false)
		}
		for dep := range pj.OptionalDependencies {
			add(dep, dir, true)
		}
	}
	add(name, filepath.Dir(src), false)
	for dir := range copied {
		rel, _ := filepath.Rel(src, dir)
		err := filepath.Walk(dir, func(p string, info fs.FileInfo, err error) error {
			if err != nil {
				return err
			}
			r, _ := filepath.Rel(dir, p)
			if info.IsDir() && info.Name() == "node_modules" && p != dir {
				return filepath.SkipDir // nested packages are copied when needed
			}
			to := filepath.Join(dst, rel, r)
			if info.IsDir() {
				return os.MkdirAll(to, 0o755)
			}
			return copyEntry(p, to, info.Mode())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// copyEntry copies src, a regular file or a symbolic link of the given
// mode, to dst (its directory made as needed); anything else is left out.
func copyEntry(src, dst string, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case mode.IsRegular():
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, mode.Perm())
	}
	return nil
}
