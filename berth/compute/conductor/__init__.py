"""The conductors: the super-conductor (above the cells) builds servers; the cell conductor moves
a failed build to its next alternate."""
