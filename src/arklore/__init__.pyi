# The types of the package's lazy public names (``__init__.py`` imports each on first use, so
# its ``__getattr__`` says only ``object``): what a type checker sees of ``arklore.*``.
from arklore.api import assemble_turn as assemble_turn
from arklore.api import default_workspace as default_workspace
from arklore.api import find_mentions as find_mentions
from arklore.api import get_all_relationships_for as get_all_relationships_for
from arklore.api import get_anchor_relations as get_anchor_relations
from arklore.api import get_contextual_relations as get_contextual_relations
from arklore.api import get_memories as get_memories
from arklore.api import get_relation_background as get_relation_background
from arklore.api import get_relation_context as get_relation_context
from arklore.api import set_default_workspace as set_default_workspace
from arklore.core.errors import ArkloreError as ArkloreError
from arklore.settings import Settings as Settings
from arklore.workspace import Paths as Paths
from arklore.workspace import Workspace as Workspace

__version__: str
__all__: list[str]
_PUBLIC: dict[str, str]
