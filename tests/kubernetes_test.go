package tests

// deploy/kubernetes/fleet.yaml checked offline: every document decodes strictly into its Kubernetes
// type, and the Deployments, Services and Ingress agree with the fleet file the manifests carry.

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
)

// TestKubernetesManifests checks deploy/kubernetes/fleet.yaml offline:
// every document decodes strictly into its Kubernetes API type (an
// unknown or misspelt field, or a value of the wrong type, fails), and
// the manifests agree with the fleet file they carry — one replica per
// instance, replaced never beside itself (Recreate), a grace period
// that holds the drain and the shutdown, readiness on /readyz, each
// Deployment an instance of the file, each destination's Ingress path
// sent to the Service of its owner. (No cluster runs them here.)
func TestKubernetesManifests(t *testing.T) {
	data, err := os.ReadFile("../deploy/kubernetes/fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var (
		cfg         *config.Config
		deployments = map[string]*appsv1.Deployment{}
		services    = map[string]*corev1.Service{}
		ingresses   []*networkingv1.Ingress
	)
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var head struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		var obj any
		switch head.APIVersion + " " + head.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "networking.k8s.io/v1 Ingress":
			obj = &networkingv1.Ingress{}
		default:
			t.Fatalf("document %d: unexpected %s %s", i, head.APIVersion, head.Kind)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Fatalf("document %d (%s): %v", i, head.Kind, err)
		}
		switch o := obj.(type) {
		case *corev1.ConfigMap:
			if cfg, err = config.Parse("the ConfigMap's destinations.yaml", []byte(o.Data["destinations.yaml"]), nil); err != nil {
				t.Fatal(err)
			}
		case *appsv1.Deployment:
			deployments[o.Name] = o
		case *corev1.Service:
			services[o.Name] = o
		case *networkingv1.Ingress:
			ingresses = append(ingresses, o)
		}
	}
	if cfg == nil || len(cfg.InstanceNames) == 0 {
		t.Fatal("no fleet file (with instances) in a ConfigMap")
	}
	instanceOf := map[string]string{} // Service name → instance
	for _, n := range cfg.InstanceNames {
		d := deployments["stelae-"+n]
		if d == nil {
			t.Errorf("instance %s has no Deployment stelae-%s", n, n)
			continue
		}
		spec := d.Spec.Template.Spec
		if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s: replicas %v, strategy %q; want 1 and Recreate (never two owners)", d.Name, ptrValue(d.Spec.Replicas), d.Spec.Strategy.Type)
		}
		c := spec.Containers[0]
		if !slices.Equal(c.Args[:2], []string{"-instance", n}) || !slices.Contains(c.Args, "-drain-timeout") {
			t.Errorf("%s: args %v; want -instance %s and a -drain-timeout", d.Name, c.Args, n)
		}
		drain := bridge.Defaults().DrainTimeout
		if i := slices.Index(c.Args, "-drain-timeout"); i >= 0 && i+1 < len(c.Args) {
			if drain, err = time.ParseDuration(c.Args[i+1]); err != nil {
				t.Errorf("%s: -drain-timeout %q: %v", d.Name, c.Args[i+1], err)
			}
		}
		grace := int64((drain + bridge.Defaults().ShutdownTimeout) / time.Second)
		if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds < grace {
			t.Errorf("%s: terminationGracePeriodSeconds %v; want at least %d (the drain and the shutdown)", d.Name, spec.TerminationGracePeriodSeconds, grace)
		}
		if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness probe %+v; want GET /readyz", d.Name, c.ReadinessProbe)
		}
		s := services["stelae-"+n]
		if s == nil || s.Spec.Selector["instance"] != n {
			t.Errorf("instance %s: Service stelae-%s %+v", n, n, s)
		}
		instanceOf["stelae-"+n] = n
	}
	routed := map[string]bool{}
	for _, ing := range ingresses {
		for _, rule := range ing.Spec.Rules {
			for _, p := range rule.HTTP.Paths {
				dest := strings.Trim(p.Path, "/")
				routed[dest] = true
				svc := p.Backend.Service.Name
				if dest == "mcp" {
					dest = cfg.Default
				}
				// One instance's Service: an Ingress cannot keep a session
				// where it was made, so even a destination on several
				// instances (isolation: session) goes to one of them.
				if owners := cfg.Owners(dest); !slices.Contains(owners, instanceOf[svc]) {
					t.Errorf("Ingress %s sends %s to %s; its owners are %v", ing.Name, p.Path, svc, owners)
				}
			}
		}
	}
	for _, d := range cfg.Names {
		if !routed[d] {
			t.Errorf("no Ingress path for %s", d)
		}
	}
	t.Logf("%d deployments, %d services, %d ingresses checked", len(deployments), len(services), len(ingresses))
}

// ptrValue is *p, or nil.
func ptrValue[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
