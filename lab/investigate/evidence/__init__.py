"""What a target answered, read by its spec (rows: replies and histories as the lab's rows), its
conversation key read from the lab's Redis (keys: PTTL, type, raw value) and the store's record
of every command on it (store).

May import: lab.common, lab.model, lab.investigate.spec.
"""
