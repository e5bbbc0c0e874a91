// Package v1alpha1 holds gateway policies shaped like those whose CRDs Kubernetes 1.37 refused
// (timeouts of type metav1.Duration checked by `matches(self, <duration regex>)`, in lists of
// 16 and 64): a fixture of celcost's tests, written for them.
// +kubebuilder:object:generate=false
// +groupName=gateway.example.io
package v1alpha1
