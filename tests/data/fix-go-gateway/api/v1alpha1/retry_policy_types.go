package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Retry is one retry rule.
type Retry struct {
	// Codes retried on.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Codes []int32 `json:"codes,omitempty"`

	// Attempts at most.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// PerTryTimeout bounds each attempt.
	// +optional
	// +kubebuilder:validation:XValidation:rule="matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')",message="perTryTimeout must be a duration such as 250ms"
	PerTryTimeout *metav1.Duration `json:"perTryTimeout,omitempty"`

	// BackoffBase is the first wait between attempts.
	// +kubebuilder:validation:XValidation:rule="matches(self, '^([0-9]{1,5}(h|m|s|ms)){1,4}$')",message="invalid duration value"
	BackoffBase metav1.Duration `json:"backoffBase"`

	// Intervals between attempts, in order.
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:XValidation:rule="self.all(d, matches(d, '^([0-9]{1,5}(h|m|s|ms)){1,4}$'))",message="invalid duration value"
	// +optional
	Intervals []metav1.Duration `json:"intervals,omitempty"`
}

// RetryPolicySpec is what a RetryPolicy asks.
type RetryPolicySpec struct {
	// Retries, in order.
	// +kubebuilder:validation:MaxItems=64
	Retries []Retry `json:"retries"`
}

// +kubebuilder:object:root=true

// RetryPolicy retries requests to a backend.
type RetryPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec RetryPolicySpec `json:"spec,omitempty"`
}
