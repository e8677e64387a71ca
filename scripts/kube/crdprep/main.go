// crdprep turns Kubernetes YAML into JSON that scripts/kube.sh and scripts/capi.sh send
// to a kube-apiserver with curl (no kubectl, no Python YAML).
//
//	crdprep [-contract] -version v1beta2 -out DIR CRD.yaml...
//	crdprep [-contract] -convert-port N -ca CA.pem -out DIR CRD.yaml...
//
// For each CRD: with -version, keep only the named version (served: true, storage:
// true, no deprecation marks) and drop spec.conversion (nothing converts between
// versions); with -convert-port, keep every version and let the manager serving
// https://127.0.0.1:N/convert convert between them (CA bundle of CA.pem). Drop any
// status and write DIR/<metadata.name>.json. With -contract, CRDs outside the Cluster
// API core groups get the contract labels the providers' kustomizations add
// (cluster.x-k8s.io/v1beta2: v1beta2, ...), which the topology controller reads.
// Prints one line "NAME GROUP STORAGE-VERSION PLURAL" per CRD.
//
//	crdprep -objects [-namespace NS] [-webhook-port N -ca CA.pem -prefix P] -out DIR FILE.yaml...
//
// Every document of the (multi-document) files becomes DIR/NNN.json, in order; prints
// one line "FILE COLLECTION NAME" per document, COLLECTION being the API path of its
// kind (namespaced kinds in NS). With -webhook-port, webhook configurations are renamed
// P-<name> and each webhook's Service reference becomes
// url https://127.0.0.1:N<path> with the CA bundle of CA.pem.
//
// Built by scripts/kube.sh from the wrapper module, so sigs.k8s.io/yaml comes from
// the same go.sum as kube-apiserver.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

var coreGroups = map[string]bool{
	"cluster.x-k8s.io":         true,
	"addons.cluster.x-k8s.io":  true,
	"ipam.cluster.x-k8s.io":    true,
	"runtime.cluster.x-k8s.io": true,
}

var clusterScoped = map[string]bool{
	"Namespace":                      true,
	"CustomResourceDefinition":       true,
	"MutatingWebhookConfiguration":   true,
	"ValidatingWebhookConfiguration": true,
	"ClusterRole":                    true,
	"ClusterRoleBinding":             true,
}

func main() {
	version := flag.String("version", "v1beta2", "CRDs: the one version to serve and store")
	contract := flag.Bool("contract", false, "CRDs: add provider contract labels")
	objects := flag.Bool("objects", false, "convert every document, not CRDs")
	namespace := flag.String("namespace", "default", "objects: namespace of namespaced kinds")
	port := flag.Int("webhook-port", 0, "objects: serve webhooks at https://127.0.0.1:PORT")
	ca := flag.String("ca", "", "objects: CA bundle file for webhooks")
	prefix := flag.String("prefix", "", "objects: name prefix for webhook configurations")
	convert := flag.Int("convert-port", 0, "CRDs: keep all versions, convert at https://127.0.0.1:PORT/convert")
	out := flag.String("out", ".", "output directory")
	flag.Parse()
	var err error
	var bundle string
	if *port != 0 || *convert != 0 {
		raw, e := os.ReadFile(*ca)
		if e != nil {
			fail("-ca", e)
		}
		bundle = base64.StdEncoding.EncodeToString(raw)
	}
	if *objects {
		n := 0
		for _, path := range flag.Args() {
			if n, err = prepObjects(path, *out, *namespace, *port, bundle, *prefix, n); err != nil {
				fail(path, err)
			}
		}
		return
	}
	for _, path := range flag.Args() {
		if err = prepCRD(path, *version, *contract, *convert, bundle, *out); err != nil {
			fail(path, err)
		}
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "crdprep: %s: %v\n", what, err)
	os.Exit(1)
}

func prepCRD(path, version string, contract bool, convert int, bundle, out string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var crd map[string]any
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		return err
	}
	meta, _ := crd["metadata"].(map[string]any)
	spec, _ := crd["spec"].(map[string]any)
	name, _ := meta["name"].(string)
	versions, _ := spec["versions"].([]any)
	if name == "" || versions == nil {
		return fmt.Errorf("not a CustomResourceDefinition")
	}
	var kept []any
	storage := ""
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if convert == 0 {
			if vm["name"] != version {
				continue
			}
			vm["served"] = true
			vm["storage"] = true
			delete(vm, "deprecated")
			delete(vm, "deprecationWarning")
		}
		if vm["storage"] == true {
			storage, _ = vm["name"].(string)
		}
		kept = append(kept, vm)
	}
	if convert == 0 && len(kept) != 1 {
		return fmt.Errorf("version %s not found", version)
	}
	if storage == "" {
		return fmt.Errorf("no storage version")
	}
	spec["versions"] = kept
	if convert != 0 && len(kept) > 1 {
		spec["conversion"] = map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": []any{"v1", "v1beta1"},
				"clientConfig": map[string]any{
					"url":      fmt.Sprintf("https://127.0.0.1:%d/convert", convert),
					"caBundle": bundle,
				},
			},
		}
	} else {
		delete(spec, "conversion") // strategy None: nothing to convert between
	}
	delete(crd, "status")
	delete(meta, "annotations") // controller-gen's version stamp only
	group, _ := spec["group"].(string)
	if contract && !coreGroups[group] {
		labels, _ := meta["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
		}
		for _, v := range kept {
			n, _ := v.(map[string]any)["name"].(string)
			if n == "v1beta1" || n == "v1beta2" {
				labels["cluster.x-k8s.io/"+n] = n
			}
		}
		meta["labels"] = labels
	}
	js, err := json.Marshal(crd)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, name+".json"), js, 0o644); err != nil {
		return err
	}
	names, _ := spec["names"].(map[string]any)
	fmt.Println(name, group, storage, names["plural"])
	return nil
}

// documents splits a multi-document YAML file at lines that are exactly "---".
func documents(raw []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	flush := func() {
		if len(bytes.TrimSpace(cur.Bytes())) > 0 {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for sc.Scan() {
		if strings.TrimRight(sc.Text(), " ") == "---" {
			flush()
			continue
		}
		cur.Write(sc.Bytes())
		cur.WriteByte('\n')
	}
	flush()
	return docs
}

func collection(apiVersion, kind, namespace string) string {
	base := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		base = "/api/" + apiVersion
	}
	plural := strings.ToLower(kind)
	if strings.HasSuffix(plural, "s") {
		plural += "es"
	} else {
		plural += "s"
	}
	if clusterScoped[kind] {
		return base + "/" + plural
	}
	return base + "/namespaces/" + namespace + "/" + plural
}

func prepObjects(path, out, namespace string, port int, bundle, prefix string, n int) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return n, err
	}
	for _, doc := range documents(raw) {
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return n, err
		}
		if len(obj) == 0 {
			continue // a document of comments only
		}
		apiVersion, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		if apiVersion == "" || kind == "" || name == "" {
			return n, fmt.Errorf("document %d has no apiVersion, kind or name", n)
		}
		if !clusterScoped[kind] {
			meta["namespace"] = namespace
		}
		if port != 0 && strings.HasSuffix(kind, "WebhookConfiguration") {
			name = prefix + "-" + name
			obj["metadata"] = map[string]any{"name": name}
			hooks, _ := obj["webhooks"].([]any)
			for _, h := range hooks {
				hm, _ := h.(map[string]any)
				cc, _ := hm["clientConfig"].(map[string]any)
				svc, _ := cc["service"].(map[string]any)
				p, _ := svc["path"].(string)
				hm["clientConfig"] = map[string]any{
					"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, p),
					"caBundle": bundle,
				}
			}
		}
		js, err := json.Marshal(obj)
		if err != nil {
			return n, err
		}
		file := filepath.Join(out, fmt.Sprintf("%03d.json", n))
		if err := os.WriteFile(file, js, 0o644); err != nil {
			return n, err
		}
		fmt.Println(file, collection(apiVersion, kind, namespace), name)
		n++
	}
	return n, nil
}
