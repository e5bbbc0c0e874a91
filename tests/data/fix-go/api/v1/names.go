package v1

// Hostname is a DNS name.
type Hostname string

// Host is the name Hostname had before.
type Host = Hostname

// Hostnames are DNS names.
type Hostnames []Hostname

// LabelValue is the value of a label.
type LabelValue string
