# Workloads, clusters and support cases land here (issues #4 and #5); this app imports tenants.
