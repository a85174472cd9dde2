"""The target spec: a TOML file describing a chat backend the lab did not write -- parsed
(parse), its types (schema), its field readers (fields), its sections for apps of other shapes
(shapes), a model the app calls (model), an app living in its own compose file (compose).

May import: lab.common, lab.stack.
"""
