// crdprep turns Cluster API CRD YAML files into JSON CRDs that serve and
// store exactly one version, for a kube-apiserver that runs no CAPI webhooks.
//
//	crdprep -version v1beta2 -out DIR FILE.yaml...
//
// For each CRD: keep only the named version (served: true, storage: true,
// no deprecation marks), drop spec.conversion (no conversion webhook runs)
// and any status, and write DIR/<metadata.name>.json. Prints one line
// "NAME GROUP VERSION PLURAL" per CRD (the script waits on these). Built by
// scripts/kube.sh from the wrapper module, so sigs.k8s.io/yaml comes from the
// same go.sum as kube-apiserver.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

func main() {
	version := flag.String("version", "v1beta2", "the one version to serve and store")
	out := flag.String("out", ".", "output directory")
	flag.Parse()
	for _, path := range flag.Args() {
		if err := prep(path, *version, *out); err != nil {
			fmt.Fprintf(os.Stderr, "crdprep: %s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func prep(path, version, out string) error {
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
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		if vm["name"] != version {
			continue
		}
		vm["served"] = true
		vm["storage"] = true
		delete(vm, "deprecated")
		delete(vm, "deprecationWarning")
		kept = append(kept, vm)
	}
	if len(kept) != 1 {
		return fmt.Errorf("version %s not found", version)
	}
	spec["versions"] = kept
	delete(spec, "conversion") // strategy None: nothing to convert between
	delete(crd, "status")
	js, err := json.Marshal(crd)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, name+".json"), js, 0o644); err != nil {
		return err
	}
	names, _ := spec["names"].(map[string]any)
	fmt.Println(name, spec["group"], version, names["plural"])
	return nil
}
