package plugin

import (
	"fmt"
	"strconv"
	"time"
)

// Args configures the plugin (pluginConfig args of the profile). Every field
// is optional.
type Args struct {
	// Topology names the node-label preset that builds the cluster's
	// topology: "gke", "aws" (EC2 types with three network layers), "aws4"
	// (four layers: p6-b200, p6-b300; see topology/kube.PresetAWSFourLayers),
	// "nvlink", "zone", "labels" (with Levels) or "flat"; "gke" when empty.
	Topology string `json:"topology,omitempty"`
	// Levels lists node label keys top to bottom for Topology "labels".
	Levels []string `json:"levels,omitempty"`
	// GPUResource is the extended resource counted as GPUs;
	// nvidia.com/gpu when empty.
	GPUResource string `json:"gpuResource,omitempty"`
	// PermitTimeoutSeconds bounds how long a reserved pod waits at Permit
	// for the rest of its gang (default 60); then the gang is torn down
	// and placed again.
	PermitTimeoutSeconds int `json:"permitTimeoutSeconds,omitempty"`
	// MaxBindAttempts is how many times one pod of an admitted gang may
	// fail to bind before the gang is torn down (default 3). The first
	// failure retries on the same node; later ones move the pod to
	// another node first (backfill.Engine.ReplacePod).
	MaxBindAttempts int `json:"maxBindAttempts,omitempty"`
	// AllowedTTLSeconds is how long a measured allowed node set (the
	// nodes where the profile's other Filter plugins accept a pod shape)
	// is used before a waiting gang measures it again (default 60). A
	// node that joins (or is back under a deleted node's name), or whose
	// labels, taints, cordon or allocatable resources change, has the
	// waiting gangs measure again at once the sets of the pod shapes it
	// could serve (in the cluster model, with at least their GPUs per
	// pod).
	AllowedTTLSeconds int `json:"allowedTTLSeconds,omitempty"`
	// EvictionGracePeriodSeconds is the grace period of the deletions that
	// tear down a gang that cannot run whole (nil: the pods' own).
	EvictionGracePeriodSeconds *int64 `json:"evictionGracePeriodSeconds,omitempty"`
	// BatchMilliseconds is how long the engine loop waits after an event
	// for more events before it runs a cycle (default 20).
	BatchMilliseconds int `json:"batchMilliseconds,omitempty"`
}

// Validate checks the args and fills in defaults.
func (a *Args) Validate() error {
	if a.GPUResource == "" {
		a.GPUResource = defaultGPUResource
	}
	if a.Topology == "" {
		a.Topology = "gke"
	}
	if _, err := topologyOptions(a); err != nil {
		return err
	}
	for name, v := range map[string]int{"permitTimeoutSeconds": a.PermitTimeoutSeconds,
		"maxBindAttempts": a.MaxBindAttempts, "allowedTTLSeconds": a.AllowedTTLSeconds,
		"batchMilliseconds": a.BatchMilliseconds} {
		if v < 0 {
			return fmt.Errorf("phalanx args: %s is negative (%d)", name, v)
		}
	}
	if a.PermitTimeoutSeconds == 0 {
		a.PermitTimeoutSeconds = 60
	}
	if a.MaxBindAttempts == 0 {
		a.MaxBindAttempts = 3
	}
	if a.AllowedTTLSeconds == 0 {
		a.AllowedTTLSeconds = 60
	}
	if a.BatchMilliseconds == 0 {
		a.BatchMilliseconds = 20
	}
	return nil
}

func (a *Args) permitTimeout() time.Duration {
	return time.Duration(a.PermitTimeoutSeconds) * time.Second
}

func (a *Args) allowedTTL() time.Duration { return time.Duration(a.AllowedTTLSeconds) * time.Second }

func (a *Args) batch() time.Duration { return time.Duration(a.BatchMilliseconds) * time.Millisecond }

// scoutTimeout is how long a scout may take before another is sent.
func (a *Args) scoutTimeout() time.Duration { return 10 * time.Second }

// defaultGPUResource is the extended resource counted as GPUs by default.
const defaultGPUResource = "nvidia.com/gpu"

func atoiPositive(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}
