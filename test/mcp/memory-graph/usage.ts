/**
 * The reference memory server's own usage, as its README describes it (John_Smith speaks Spanish and
 * works at Anthropic): create, create again, relate, observe, search, open, read the graph, delete.
 * Each step is one tool call; both servers get the same calls in the same order.
 */
export interface Step {
  tool: string;
  args: Record<string, unknown>;
}

export const USAGE: Step[] = [
  {
    tool: 'create_entities',
    args: {
      entities: [
        { name: 'John_Smith', entityType: 'person', observations: ['Speaks fluent Spanish'] },
        { name: 'Anthropic', entityType: 'organization', observations: [] },
        { name: 'Café Zürich / Bahnhofstr. 1', entityType: 'place', observations: ['Serves flat white ~ 5 CHF'] },
      ],
    },
  },
  {
    tool: 'create_entities',
    args: {
      entities: [
        { name: 'John_Smith', entityType: 'person', observations: ['Ignored: the name exists'] },
        { name: 'Jane Doe', entityType: 'person', observations: ['Manages the Zürich office', 'Likes tea'] },
      ],
    },
  },
  {
    tool: 'create_relations',
    args: {
      relations: [
        { from: 'John_Smith', to: 'Anthropic', relationType: 'works_at' },
        { from: 'Jane Doe', to: 'John_Smith', relationType: 'manages' },
        { from: 'John_Smith', to: 'Café Zürich / Bahnhofstr. 1', relationType: 'meets clients at' },
      ],
    },
  },
  {
    tool: 'create_relations',
    args: {
      relations: [
        { from: 'John_Smith', to: 'Anthropic', relationType: 'works_at' },
        { from: 'Jane Doe', to: 'Anthropic', relationType: 'works_at' },
      ],
    },
  },
  {
    tool: 'add_observations',
    args: {
      observations: [
        {
          entityName: 'John_Smith',
          contents: ['Graduated in 2019', 'Prefers morning meetings', 'Speaks fluent Spanish'],
        },
        { entityName: 'Anthropic', contents: ['Builds Claude'] },
      ],
    },
  },
  { tool: 'add_observations', args: { observations: [{ entityName: 'Nobody', contents: ['exists'] }] } },
  { tool: 'search_nodes', args: { query: 'spanish' } },
  { tool: 'search_nodes', args: { query: 'ORGANIZATION' } },
  { tool: 'search_nodes', args: { query: 'zürich' } },
  { tool: 'search_nodes', args: { query: 'no such thing' } },
  { tool: 'open_nodes', args: { names: ['John_Smith', 'Nobody'] } },
  { tool: 'open_nodes', args: { names: ['Anthropic'] } },
  { tool: 'read_graph', args: {} },
  {
    tool: 'delete_observations',
    args: {
      deletions: [
        { entityName: 'John_Smith', observations: ['Prefers morning meetings', 'never said'] },
        { entityName: 'Nobody', observations: ['x'] },
      ],
    },
  },
  { tool: 'delete_relations', args: { relations: [{ from: 'Jane Doe', to: 'John_Smith', relationType: 'manages' }] } },
  { tool: 'read_graph', args: {} },
  { tool: 'delete_entities', args: { entityNames: ['Anthropic', 'Nobody'] } },
  { tool: 'read_graph', args: {} },
  { tool: 'open_nodes', args: { names: ['John_Smith', 'Anthropic'] } },
  {
    tool: 'create_entities',
    args: { entities: [{ name: 'Anthropic', entityType: 'company', observations: ['Re-created after deletion'] }] },
  },
  { tool: 'read_graph', args: {} },
];
