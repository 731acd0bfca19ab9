package skills

// ContractOf gives the external tests the contract trust pins for a skill
// (plugin, name), and whether the catalog has it.
func ContractOf(c *Catalog, plugin, name string) (contract, bool) { return c.contract(plugin, name) }

// Fingerprint gives the external tests a contract's pin fingerprint.
func (k contract) Fingerprint() string { return k.fingerprint() }

// ErrNoInstance is Apply's error without an instance name.
var ErrNoInstance = errNoInstance
