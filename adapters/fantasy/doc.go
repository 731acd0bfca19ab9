// Package fantasy connects Gatehouse to charm.land/fantasy.
package fantasy
