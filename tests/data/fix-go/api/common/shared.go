// Package common holds what every widget has.
package common

// Shared fields of every widget, inlined into its spec.
type Shared struct {
	// Tags of the widget.
	// +optional
	Tags []string `json:"tags,omitempty"`
	// Owner of the widget.
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	Owner string `json:"owner,omitempty"`
}
