// addons-check: offline check of deploy/addons/*.yaml (CAAPH HelmChartProxies) and their
// server-side apply; built and run by scripts/addons.sh.
//
//	addons-check check -sample FILE [-show] PROXY.yaml...
//	addons-check apply -kubeconfig FILE [-repo URL] PROXY.yaml...
//
// check parses every proxy strictly (field names of CAAPH v0.4.1's HelmChartProxySpec),
// renders its valuesTemplate the way CAAPH v0.4.1 does (internal/value_substitutions.go:
// text/template + sprig.TxtFuncMap(), data {"Cluster": <unstructured Cluster>}) against
// variants of the sample Cluster, parses the result as YAML (sigs.k8s.io/yaml, as Helm
// reads values) and matches clusterSelector with apimachinery's label selectors:
//
//	sample        the sample as it is
//	cni=<value>   per CNI proxy (a selector on addons.magnum-rs/cni): the sample labelled
//	              for it; exactly one CNI proxy may match each of these and the sample
//	<v>+mirror    each of the above with imageRepository = "registry.example.com/mirror/":
//	              every image value (keys repository, registry, image) must be under the
//	              mirror (trailing slash trimmed), and none without it
//	kube=<v>      OCCM's image tag per Kubernetes version (magnum-cluster-api's test table)
//	mcapi         the sample without any addons.magnum-rs/* label (a Cluster magnum-cluster-api
//	              made): no proxy may select it
//	bare          a Cluster with only a name: every template must still render (CAAPH stops
//	              reconciling a proxy at the first Cluster whose values fail)
//
// Every proxy must select at least one variant, and render for each it selects.
//
// apply server-side-applies Namespace magnum-system and the proxies (fieldManager
// addons.sh, force) with the kubeconfig's current context, every spec.repoURL replaced by
// -repo when given.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/Masterminds/sprig/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

const (
	namespace   = "magnum-system"
	labelPrefix = "addons.magnum-rs/"
	cniLabel    = "addons.magnum-rs/cni"
	mirror      = "registry.example.com/mirror"
)

// proxy is a HelmChartProxy with the spec fields of CAAPH v0.4.1
// (api/v1alpha1/helmchartproxy_types.go); nested option structs are left as maps.
type proxy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Labels      map[string]string `json:"labels,omitempty"`
		Annotations map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		ClusterSelector   metav1.LabelSelector   `json:"clusterSelector"`
		ChartName         string                 `json:"chartName"`
		RepoURL           string                 `json:"repoURL"`
		ReleaseName       string                 `json:"releaseName,omitempty"`
		ReleaseNamespace  string                 `json:"namespace,omitempty"`
		Version           string                 `json:"version,omitempty"`
		ValuesTemplate    string                 `json:"valuesTemplate,omitempty"`
		ReconcileStrategy string                 `json:"reconcileStrategy,omitempty"`
		Options           map[string]interface{} `json:"options,omitempty"`
		Credentials       map[string]interface{} `json:"credentials,omitempty"`
		TLSConfig         map[string]interface{} `json:"tlsConfig,omitempty"`
	} `json:"spec"`

	file     string
	selector labels.Selector
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "check":
		err = check(os.Args[2:])
	case "apply":
		err = apply(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "addons-check:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: addons-check check -sample FILE [-show] PROXY.yaml...\n"+
		"       addons-check apply -kubeconfig FILE [-repo URL] PROXY.yaml...")
	os.Exit(2)
}

// load reads and validates one proxy file.
func load(file string) (*proxy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			return nil, fmt.Errorf("%s: one HelmChartProxy per file (found ---)", file)
		}
	}
	p := &proxy{file: file}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s := &p.Spec
	var problems []string
	bad := func(format string, a ...interface{}) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if p.APIVersion != "addons.cluster.x-k8s.io/v1alpha1" || p.Kind != "HelmChartProxy" {
		bad("not an addons.cluster.x-k8s.io/v1alpha1 HelmChartProxy (%s %s)", p.APIVersion, p.Kind)
	}
	if p.Metadata.Name == "" || p.Metadata.Namespace != namespace {
		bad("metadata: need a name and namespace %s", namespace)
	}
	if s.ChartName == "" || s.RepoURL == "" || s.Version == "" || s.ReleaseName == "" || s.ReleaseNamespace == "" {
		bad("spec: chartName, repoURL, version, releaseName and namespace are all needed")
	}
	if _, err := url.ParseRequestURI(s.RepoURL); err != nil { // CAAPH's webhook: isUrlValid
		bad("spec.repoURL %q: %v", s.RepoURL, err)
	} else if !strings.HasPrefix(s.RepoURL, "https://") && !strings.HasPrefix(s.RepoURL, "http://") && !strings.HasPrefix(s.RepoURL, "oci://") {
		bad("spec.repoURL %q: not http(s):// or oci://", s.RepoURL)
	}
	switch s.ReconcileStrategy {
	case "", "Continuous", "InstallOnce":
	default:
		bad("spec.reconcileStrategy %q", s.ReconcileStrategy)
	}
	if len(s.ClusterSelector.MatchLabels) == 0 && len(s.ClusterSelector.MatchExpressions) == 0 {
		bad("spec.clusterSelector is empty: it would select every Cluster, magnum-cluster-api's too")
	}
	if sel, err := metav1.LabelSelectorAsSelector(&s.ClusterSelector); err != nil {
		bad("spec.clusterSelector: %v", err)
	} else {
		p.selector = sel
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	return p, nil
}

func loadAll(files []string) ([]*proxy, error) {
	if len(files) == 0 {
		return nil, errors.New("no proxy files")
	}
	var out []*proxy
	seen := map[string]string{}
	for _, f := range files {
		p, err := load(f)
		if err != nil {
			return nil, err
		}
		if other, dup := seen[p.Metadata.Name]; dup {
			return nil, fmt.Errorf("%s and %s: both name %s", other, f, p.Metadata.Name)
		}
		seen[p.Metadata.Name] = f
		out = append(out, p)
	}
	return out, nil
}

// --- check ---

type variant struct {
	name    string
	cluster map[string]interface{}
}

func deepCopy(v map[string]interface{}) map[string]interface{} {
	b, _ := json.Marshal(v)
	var out map[string]interface{}
	_ = json.Unmarshal(b, &out)
	return out
}

func clusterLabels(c map[string]interface{}) map[string]string {
	out := map[string]string{}
	md, _ := c["metadata"].(map[string]interface{})
	l, _ := md["labels"].(map[string]interface{})
	for k, v := range l {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func setLabel(c map[string]interface{}, k, v string) {
	md := c["metadata"].(map[string]interface{})
	l, _ := md["labels"].(map[string]interface{})
	if l == nil {
		l = map[string]interface{}{}
		md["labels"] = l
	}
	l[k] = v
}

func setVariable(c map[string]interface{}, name string, value interface{}) error {
	spec, _ := c["spec"].(map[string]interface{})
	topo, _ := spec["topology"].(map[string]interface{})
	vars, _ := topo["variables"].([]interface{})
	for _, v := range vars {
		if m, ok := v.(map[string]interface{}); ok && m["name"] == name {
			m["value"] = value
			return nil
		}
	}
	return fmt.Errorf("sample Cluster has no topology variable %s", name)
}

// render does what CAAPH v0.4.1's internal.ParseValues does with the template.
func render(p *proxy, cluster map[string]interface{}) (string, error) {
	tmpl, err := template.New(p.Spec.ChartName + "-check").Funcs(sprig.TxtFuncMap()).Parse(p.Spec.ValuesTemplate)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]interface{}{"Cluster": cluster}); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// renderValues renders and parses; the values must be a YAML mapping with no "<no value>".
func renderValues(p *proxy, cluster map[string]interface{}) (map[string]interface{}, string, error) {
	out, err := render(p, cluster)
	if err != nil {
		return nil, out, err
	}
	if strings.Contains(out, "<no value>") {
		return nil, out, errors.New("rendered values contain <no value> (a missing key printed)")
	}
	var values map[string]interface{}
	if err := yaml.Unmarshal([]byte(out), &values); err != nil {
		return nil, out, fmt.Errorf("rendered values are not YAML: %w", err)
	}
	if values == nil {
		return nil, out, errors.New("rendered values are empty")
	}
	return values, out, nil
}

// images collects the string values under keys repository, registry and image.
func images(v interface{}, path string, out map[string]string) {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			p := path + "." + k
			if s, ok := x.(string); ok && (k == "repository" || k == "registry" || k == "image") {
				out[p] = s
				continue
			}
			images(x, p, out)
		}
	case []interface{}:
		for i, x := range t {
			images(x, fmt.Sprintf("%s[%d]", path, i), out)
		}
	}
}

func lookup(v interface{}, path ...string) interface{} {
	for _, k := range path {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func check(args []string) error {
	fs := flag.NewFlagSet("check", flag.ExitOnError)
	samplePath := fs.String("sample", "", "sample Cluster (JSON, cluster.x-k8s.io/v1beta1)")
	show := fs.Bool("show", false, "print the values rendered for the sample")
	_ = fs.Parse(args)
	if *samplePath == "" {
		usage()
	}
	proxies, err := loadAll(fs.Args())
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(*samplePath)
	if err != nil {
		return err
	}
	var sample map[string]interface{}
	if err := json.Unmarshal(raw, &sample); err != nil {
		return fmt.Errorf("%s: %w", *samplePath, err)
	}

	// Variants of the sample: as it is and labelled for each CNI proxy, each rendered
	// with imageRepository as in the sample and with the mirror.
	variants := []variant{{"sample", sample}}
	var cniValues []string
	for _, p := range proxies {
		if v, ok := p.Spec.ClusterSelector.MatchLabels[cniLabel]; ok {
			cniValues = append(cniValues, v)
		}
	}
	sort.Strings(cniValues)
	for _, v := range cniValues {
		if clusterLabels(sample)[cniLabel] == v {
			continue // the sample itself
		}
		c := deepCopy(sample)
		setLabel(c, cniLabel, v)
		variants = append(variants, variant{"cni=" + v, c})
	}
	mc := deepCopy(sample)
	mcLabels := mc["metadata"].(map[string]interface{})["labels"].(map[string]interface{})
	for k := range mcLabels {
		if strings.HasPrefix(k, labelPrefix) {
			delete(mcLabels, k)
		}
	}

	var failures []string
	fail := func(format string, a ...interface{}) {
		msg := fmt.Sprintf(format, a...)
		failures = append(failures, msg)
		fmt.Printf("  FAIL %s\n", msg)
	}
	underMirror := func(s string) bool {
		return (s == mirror || strings.HasPrefix(s, mirror+"/")) && !strings.Contains(s, "//")
	}

	for _, p := range proxies {
		fmt.Printf("%s: %s %s@%s -> release %s/%s, selector %s\n", filepath.Base(p.file),
			p.Metadata.Name, p.Spec.ChartName, p.Spec.Version, p.Spec.ReleaseNamespace,
			p.Spec.ReleaseName, p.selector.String())
		matched := 0
		for _, v := range variants {
			if !p.selector.Matches(labels.Set(clusterLabels(v.cluster))) {
				continue
			}
			matched++
			values, out, err := renderValues(p, v.cluster)
			if err != nil {
				fail("%s [%s]: %v\n%s", p.Metadata.Name, v.name, err, out)
				continue
			}
			imgs := map[string]string{}
			images(values, "", imgs)
			for k, s := range imgs {
				if strings.HasPrefix(s, mirror) {
					fail("%s [%s]: %s = %s is under the mirror without imageRepository", p.Metadata.Name, v.name, k, s)
				}
			}
			if *show && matched == 1 { // the first variant that selects it
				fmt.Printf("  --- values [%s]\n%s\n  ---\n", v.name, indent(out))
			}
			fmt.Printf("  ok   [%s] %d top-level keys, %d image values\n", v.name, len(values), len(imgs))

			m := deepCopy(v.cluster)
			if err := setVariable(m, "imageRepository", mirror+"/"); err != nil {
				return err
			}
			mvalues, mout, err := renderValues(p, m)
			if err != nil {
				fail("%s [%s+mirror]: %v\n%s", p.Metadata.Name, v.name, err, mout)
				continue
			}
			mimgs := map[string]string{}
			images(mvalues, "", mimgs)
			for k, s := range mimgs {
				if !underMirror(s) {
					fail("%s [%s+mirror]: %s = %s is not under %s/", p.Metadata.Name, v.name, k, s, mirror)
				}
			}
			for k := range imgs {
				if _, ok := mimgs[k]; !ok {
					fail("%s [%s+mirror]: %s not set with the mirror", p.Metadata.Name, v.name, k)
				}
			}
			fmt.Printf("  ok   [%s+mirror] %d image values under %s/\n", v.name, len(mimgs), mirror)
		}
		if matched == 0 {
			fail("%s: selects none of the sample's variants (labels %v)", p.Metadata.Name, clusterLabels(sample))
		}
		if p.selector.Matches(labels.Set(clusterLabels(mc))) {
			fail("%s: selects a Cluster without addons.magnum-rs/* labels (magnum-cluster-api's own)", p.Metadata.Name)
		} else {
			fmt.Printf("  ok   [mcapi] not selected\n")
		}
		// CAAPH v0.4.1 stops reconciling a proxy at the first selected Cluster whose values
		// fail to render (helmchartproxy_controller.go): a template must render for any
		// Cluster, even one with no spec and no annotations.
		bare := map[string]interface{}{"apiVersion": sample["apiVersion"], "kind": sample["kind"],
			"metadata": map[string]interface{}{"name": "bare", "namespace": namespace}}
		if _, out, err := renderValues(p, bare); err != nil {
			fail("%s [bare]: a Cluster without spec, labels or annotations: %v\n%s", p.Metadata.Name, err, out)
		} else {
			fmt.Printf("  ok   [bare] renders for a Cluster without spec, labels or annotations\n")
		}
		if p.Spec.ChartName == "openstack-cloud-controller-manager" {
			checkOCCMTags(p, sample, fail)
		}
	}

	// Exactly one CNI per Cluster (when the files checked include CNI proxies).
	for _, v := range variants {
		if len(cniValues) == 0 {
			break
		}
		if !strings.HasPrefix(v.name, "cni=") && v.name != "sample" {
			continue
		}
		var cni []string
		for _, p := range proxies {
			if _, ok := p.Spec.ClusterSelector.MatchLabels[cniLabel]; ok && p.selector.Matches(labels.Set(clusterLabels(v.cluster))) {
				cni = append(cni, p.Metadata.Name)
			}
		}
		if len(cni) != 1 {
			fail("[%s]: %d CNI proxies select it %v, want 1", v.name, len(cni), cni)
		} else {
			fmt.Printf("[%s]: CNI %s\n", v.name, cni[0])
		}
	}

	if len(failures) > 0 {
		return fmt.Errorf("%d failure(s)", len(failures))
	}
	fmt.Printf("%d proxies ok\n", len(proxies))
	return nil
}

// checkOCCMTags: magnum-cluster-api's test_get_cloud_provider_tag_from_kube_tag cases.
func checkOCCMTags(p *proxy, sample map[string]interface{}, fail func(string, ...interface{})) {
	cases := [][2]string{
		{"v1.22.0", "v1.22.2"}, {"v1.23.0", "v1.23.4"}, {"v1.24.0", "v1.24.6"}, {"v1.25.0", "v1.25.6"},
		{"v1.26.0", "v1.26.4"}, {"v1.27.0", "v1.27.3"}, {"v1.28.0", "v1.28.3"}, {"v1.29.0", "v1.29.1"},
		{"v1.30.0", "v1.30.3"}, {"v1.31.0", "v1.31.4"}, {"v1.32.0", "v1.32.1"}, {"v1.33.0", "v1.33.1"},
		{"v1.33.3", "v1.33.1"}, {"v1.34.0", "v1.34.1"}, {"v1.35.0", "v1.35.0"}, {"v1.60.1", "v1.35.0"},
		{"v2.0.0", "v1.35.0"}, {"invalid", "v1.35.0"}, {"master", "v1.35.0"}, {"v1.33", "v1.35.0"},
	}
	bad := 0
	for _, c := range cases {
		cl := deepCopy(sample)
		cl["spec"].(map[string]interface{})["topology"].(map[string]interface{})["version"] = c[0]
		values, _, err := renderValues(p, cl)
		if err != nil {
			fail("%s [kube=%s]: %v", p.Metadata.Name, c[0], err)
			bad++
			continue
		}
		if got := lookup(values, "image", "tag"); !reflect.DeepEqual(got, c[1]) {
			fail("%s [kube=%s]: image.tag %v, want %s", p.Metadata.Name, c[0], got, c[1])
			bad++
		}
	}
	if bad == 0 {
		fmt.Printf("  ok   [kube=...] image.tag right for %d Kubernetes versions\n", len(cases))
	}
}

func indent(s string) string {
	return "  | " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  | ")
}

// --- apply ---

type kubeconfig struct {
	CurrentContext string `json:"current-context"`
	Contexts       []struct {
		Name    string `json:"name"`
		Context struct {
			Cluster string `json:"cluster"`
			User    string `json:"user"`
		} `json:"context"`
	} `json:"contexts"`
	Clusters []struct {
		Name    string `json:"name"`
		Cluster struct {
			Server                   string `json:"server"`
			CertificateAuthority     string `json:"certificate-authority"`
			CertificateAuthorityData string `json:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
		} `json:"cluster"`
	} `json:"clusters"`
	Users []struct {
		Name string `json:"name"`
		User struct {
			Token                 string `json:"token"`
			TokenFile             string `json:"tokenFile"`
			ClientCertificate     string `json:"client-certificate"`
			ClientCertificateData string `json:"client-certificate-data"`
			ClientKey             string `json:"client-key"`
			ClientKeyData         string `json:"client-key-data"`
		} `json:"user"`
	} `json:"users"`
}

type client struct {
	server string
	token  string
	http   *http.Client
}

// fileOrData: inline base64 data, else the file (relative to the kubeconfig's directory).
func fileOrData(dir, file, data string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(data)
	}
	if file == "" {
		return nil, nil
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(dir, file)
	}
	return os.ReadFile(file)
}

func newClient(path string) (*client, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(raw, &kc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dir := filepath.Dir(path)
	var clusterName, userName string
	for _, c := range kc.Contexts {
		if c.Name == kc.CurrentContext {
			clusterName, userName = c.Context.Cluster, c.Context.User
		}
	}
	if clusterName == "" {
		return nil, fmt.Errorf("%s: no current context %q", path, kc.CurrentContext)
	}
	cl := &client{}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	found := false
	for _, c := range kc.Clusters {
		if c.Name != clusterName {
			continue
		}
		found = true
		cl.server = strings.TrimRight(c.Cluster.Server, "/")
		tlsConf.InsecureSkipVerify = c.Cluster.InsecureSkipTLSVerify
		ca, err := fileOrData(dir, c.Cluster.CertificateAuthority, c.Cluster.CertificateAuthorityData)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate authority: %w", path, err)
		}
		if ca != nil {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(ca) {
				return nil, fmt.Errorf("%s: no certificate in the certificate authority", path)
			}
			tlsConf.RootCAs = pool
		}
	}
	if !found || cl.server == "" {
		return nil, fmt.Errorf("%s: no server for cluster %q", path, clusterName)
	}
	for _, u := range kc.Users {
		if u.Name != userName {
			continue
		}
		cl.token = u.User.Token
		if cl.token == "" && u.User.TokenFile != "" {
			t, err := fileOrData(dir, u.User.TokenFile, "")
			if err != nil {
				return nil, err
			}
			cl.token = strings.TrimSpace(string(t))
		}
		cert, err := fileOrData(dir, u.User.ClientCertificate, u.User.ClientCertificateData)
		if err != nil {
			return nil, err
		}
		key, err := fileOrData(dir, u.User.ClientKey, u.User.ClientKeyData)
		if err != nil {
			return nil, err
		}
		if cert != nil && key != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				return nil, fmt.Errorf("%s: client certificate: %w", path, err)
			}
			tlsConf.Certificates = []tls.Certificate{pair}
		}
	}
	cl.http = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsConf}}
	return cl, nil
}

// ssa: server-side apply of one object (JSON is YAML) at PATH.
func (c *client) ssa(path string, obj interface{}) error {
	body, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPatch, c.server+path+"?fieldManager=addons.sh&force=true", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/apply-patch+yaml")
	req.Header.Set("User-Agent", "addons.sh")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PATCH %s: HTTP %d: %s", path, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return nil
}

func apply(args []string) error {
	fs := flag.NewFlagSet("apply", flag.ExitOnError)
	kubeconfigPath := fs.String("kubeconfig", "", "kubeconfig of the management cluster")
	repo := fs.String("repo", "", "replace every spec.repoURL with this URL")
	_ = fs.Parse(args)
	if *kubeconfigPath == "" {
		usage()
	}
	proxies, err := loadAll(fs.Args())
	if err != nil {
		return err
	}
	c, err := newClient(*kubeconfigPath)
	if err != nil {
		return err
	}
	ns := map[string]interface{}{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]interface{}{"name": namespace}}
	if err := c.ssa("/api/v1/namespaces/"+namespace, ns); err != nil {
		return err
	}
	for _, p := range proxies {
		raw, err := os.ReadFile(p.file)
		if err != nil {
			return err
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("%s: %w", p.file, err)
		}
		url := p.Spec.RepoURL
		if *repo != "" {
			url = *repo
			obj["spec"].(map[string]interface{})["repoURL"] = url
		}
		path := fmt.Sprintf("/apis/addons.cluster.x-k8s.io/v1alpha1/namespaces/%s/helmchartproxies/%s", namespace, p.Metadata.Name)
		if err := c.ssa(path, obj); err != nil {
			return fmt.Errorf("%s: %w", p.file, err)
		}
		fmt.Printf("applied HelmChartProxy %s/%s (%s %s@%s)\n", namespace, p.Metadata.Name, url, p.Spec.ChartName, p.Spec.Version)
	}
	return nil
}
