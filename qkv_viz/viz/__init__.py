"""Chapter-free pictures: heatmaps, head grids, curves (matplotlib), shared style.

viz imports the core (never a bridge or a chapter). Plot functions take ``ax=None``,
return the artists they drew and never call ``plt.show()``.
"""
