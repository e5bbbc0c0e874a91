package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/gateway/api/shared"
)

// TimeoutRule sets the timeouts of the routes it names.
type TimeoutRule struct {
	// Name of the rule.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Timeouts of the matched requests.
	// +optional
	Timeouts *shared.Timeouts `json:"timeouts,omitempty"`

	// ConnectTimeout bounds a new connection.
	// +optional
	// +kubebuilder:validation:XValidation:rule="matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')",message="invalid duration value"
	ConnectTimeout *metav1.Duration `json:"connectTimeout,omitempty"`
}

// BackendTimeoutPolicySpec is what a BackendTimeoutPolicy asks.
type BackendTimeoutPolicySpec struct {
	// Rules, the first matching wins.
	// +kubebuilder:validation:MaxItems=16
	Rules []TimeoutRule `json:"rules"`
}

// +kubebuilder:object:root=true

// BackendTimeoutPolicy sets timeouts of requests to a backend.
type BackendTimeoutPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BackendTimeoutPolicySpec `json:"spec,omitempty"`
}
