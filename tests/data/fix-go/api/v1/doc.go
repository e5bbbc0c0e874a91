// Package v1 holds the Widget API, a fixture of celcost's tests (tests/fix_go.rs).
// +kubebuilder:object:generate=false
// +groupName=widgets.example.com
package v1
