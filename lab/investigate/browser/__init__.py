"""The browser side of black-box trials: pooled contexts (pages), the lab's own page (page,
page_frames) or the app's own (app_page, app_frames), who a context is to the app (identity),
the settled history (settle), and whether a cut mid-reply landed before the reply ended (cut).

May import: lab.common, lab.stack, lab.model, lab.driver, lab.investigate.spec, lab.investigate.target, lab.investigate.evidence.
"""
