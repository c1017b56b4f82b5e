"""The values the compute services pass each other on the bus, with their JSON forms and
versions: request spec, selection, build attempt, port entry, diagnosis. Below everything else in
compute: these modules import nothing of Berth but ``wire``."""
