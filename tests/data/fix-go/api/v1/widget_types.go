package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/widgets/api/common"
)

// WidgetSpec is what a Widget should be.
// +kubebuilder:validation:XValidation:rule="self.hosts.all(h, h.matches('^[a-z0-9.-]+$'))"
// +kubebuilder:validation:XValidation:rule="!has(self.tags) || self.tags.all(t, t.matches('^[a-z]+$'))"
// +kubebuilder:validation:XValidation:rule="!has(self.labels) || self.labels.all(k, self.labels[k].matches('^[a-z]+$'))"
// +kubebuilder:validation:XValidation:rule="!has(self.notes) || self.notes.all(k, self.notes[k].matches('^[a-z ]+$'))"
// +kubebuilder:validation:XValidation:rule="!has(self.paths) || self.paths.all(p, p.startsWith('/') && p.matches('^[a-z/]+$'))"
type WidgetSpec struct {
	common.Shared `json:",inline"`

	// Hosts to serve.
	Hosts []Host `json:"hosts"`
	// Primary is the host to redirect to.
	// +optional
	Primary *Hostname `json:"primary,omitempty"`
	// Aliases of the widget.
	// +optional
	Aliases Hostnames `json:"aliases,omitempty"`
	// Labels of the widget.
	// +optional
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Notes about the widget.
	// +optional
	Notes map[string]string `json:"notes,omitempty"`
	// Paths served.
	// +kubebuilder:validation:MaxItems=100000
	// +optional
	Paths []string `json:"paths,omitempty"`
	Port  int32    `json:"port,omitempty"`
	Debug bool     `json:"debug,omitempty"`

	// Cache is not served.
	Cache string `json:"-"`
}

// WidgetStatus is what a Widget is.
type WidgetStatus struct {
	// Served are the hosts served.
	// +optional
	Served []Hostname `json:"served,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Widget is a widget.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WidgetSpec   `json:"spec,omitempty"`
	Status WidgetStatus `json:"status,omitempty"`
}
