"""Worker programs the experiments start as real child processes."""

# The public face (issue 33): what a chapter or an exercise may import.
__all__ = ["charge_read_first", "frameworks", "journal_worker", "pay_invoice",
    "paying", "restock_note", "shop_worker", "workflow_worker"]
