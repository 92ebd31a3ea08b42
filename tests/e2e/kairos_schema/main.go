// Command kairos-schema judges cloud-configs with Kairos's own code: kairos-sdk's schema package
// (the validation Kairos's agent runs) and its clusterplugin types, read the way the cluster
// plugin reads them (kairos-sdk v0.0.21 clusterplugin/plugin.go:38: yaml.v2 into
// clusterplugin.Config). workerclass's tests run it on the bootstrap data they render.
//
// Usage: kairos-schema FILE...   prints one JSON line per file:
//
//	{"file": ..., "valid": bool, "error": "...", "cluster": {...} | null}
//
// and exits 1 when any file is invalid. "cluster" is the cluster block as clusterplugin.Cluster
// holds it (what a cluster provider is handed). The program never prints a file's text.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/kairos-io/kairos-sdk/clusterplugin"
	"github.com/kairos-io/kairos-sdk/schema"
	"gopkg.in/yaml.v2"
)

type verdict struct {
	File    string   `json:"file"`
	Valid   bool     `json:"valid"`
	Error   string   `json:"error,omitempty"`
	Cluster *cluster `json:"cluster"`
}

// cluster is clusterplugin.Cluster as JSON (its Role's MarshalJSON writes an unquoted string).
type cluster struct {
	ClusterToken     string            `json:"cluster_token"`
	ControlPlaneHost string            `json:"control_plane_host"`
	Role             string            `json:"role"`
	Options          string            `json:"config"`
	ProviderOptions  map[string]string `json:"providerConfig,omitempty"`
	Env              map[string]string `json:"env,omitempty"`
}

func judge(path string) verdict {
	out := verdict{File: path}
	text, err := os.ReadFile(path)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	if err := schema.Validate(path); err != nil {
		out.Error = err.Error()
	}
	var config clusterplugin.Config
	if err := yaml.Unmarshal(text, &config); err != nil {
		if out.Error == "" {
			out.Error = fmt.Sprintf("cluster block: %v", err)
		}
	} else if config.Cluster != nil {
		c := config.Cluster
		out.Cluster = &cluster{c.ClusterToken, c.ControlPlaneHost, string(c.Role), c.Options, c.ProviderOptions, c.Env}
	}
	out.Valid = out.Error == ""
	return out
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: kairos-schema FILE...")
		os.Exit(2)
	}
	status := 0
	encoder := json.NewEncoder(os.Stdout)
	for _, path := range os.Args[1:] {
		result := judge(path)
		if !result.Valid {
			status = 1
		}
		if err := encoder.Encode(result); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(status)
}
