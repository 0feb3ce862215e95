package acl

// Redis 7.0's categories of the cluster commands, as a live redis-server 7.0.15 reports them in
// COMMAND INFO; kept apart from redisCommands only to keep that table's columns as they are.
func init() {
	admin := "admin slow dangerous"
	for name, cats := range map[string]string{
		"asking": "fast connection", "readonly": "fast connection", "readwrite": "fast connection",
		"cluster": "slow", "cluster|countkeysinslot": "slow", "cluster|getkeysinslot": "slow", "cluster|help": "slow",
		"cluster|info": "slow", "cluster|keyslot": "slow", "cluster|links": "slow", "cluster|myid": "slow",
		"cluster|nodes": "slow", "cluster|shards": "slow", "cluster|slots": "slow",
		"cluster|addslots": admin, "cluster|addslotsrange": admin, "cluster|bumpepoch": admin,
		"cluster|count-failure-reports": admin, "cluster|delslots": admin, "cluster|delslotsrange": admin,
		"cluster|failover": admin, "cluster|flushslots": admin, "cluster|forget": admin, "cluster|meet": admin,
		"cluster|replicas": admin, "cluster|replicate": admin, "cluster|reset": admin, "cluster|saveconfig": admin,
		"cluster|set-config-epoch": admin, "cluster|setslot": admin, "cluster|slaves": admin,
	} {
		redisCommands[name] = struct {
			cats string
			keys []KeySpec
		}{cats, nil}
	}
}
