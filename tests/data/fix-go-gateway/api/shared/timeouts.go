// Package shared holds what several policies embed.
package shared

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Timeouts of a request to a backend.
type Timeouts struct {
	// Request is the timeout of a whole request, such as "1s" or "500ms".
	// +optional
	//
	// +kubebuilder:validation:XValidation:rule="matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')",message="invalid duration value"
	Request *metav1.Duration `json:"request,omitempty"`

	// StreamIdle is the timeout of an idle stream.
	// +optional
	//
	// +kubebuilder:validation:XValidation:rule="matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')",message="invalid duration value"
	StreamIdle *metav1.Duration `json:"streamIdle,omitempty"`
}
