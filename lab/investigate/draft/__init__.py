"""`lab init`: draft a target spec for an app the lab did not write (init), from what the app
answered (infer), its OpenAPI document (openapi), its probe (probe), the model it calls (model),
written as TOML with the evidence of every value (toml).

May import: lab.common, lab.model, lab.investigate.spec, lab.investigate.target, lab.investigate.evidence, lab.investigate.run.
"""
