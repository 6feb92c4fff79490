"""The what-if planner: plans for the custom nodes, scenarios, and what they cost."""
