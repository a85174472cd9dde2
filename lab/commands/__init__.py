"""The commands behind the CLI that run the runner many times: the defect x fault matrix and its
verdict (chaos), the correct profile under every fault (soak), the lab against a plain Playwright
loop (bench), where the CPU goes (cpu), shards merged into one verdict (merge), what a run needs
on this machine (needs: `lab doctor`, `lab setup`).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.runner, lab.report, lab.driver
(needs: where the browser is)."""
